"""Prints where, relative to the install prefix given, this interpreter finds installed packages."""
import os
import sys
import sysconfig

prefix = sys.argv[1]
scheme = sysconfig.get_default_scheme() if hasattr(sysconfig, "get_default_scheme") else "posix_prefix"
if scheme == "posix_local":
    # Debian's python3: /usr/lib/python3/dist-packages for the system, and
    # PREFIX/lib/python3.X/dist-packages for any other prefix (/usr/local).
    print("lib/python3/dist-packages" if prefix == "/usr" else "lib/python%d.%d/dist-packages" % sys.version_info[:2])
else:
    print(os.path.relpath(sysconfig.get_path("purelib", "posix_prefix", vars={"base": "/", "platbase": "/"}), "/"))
