# A dict- and list-heavy Python workload for bench/compare_tools.py: builds an index of words to
# the records that contain them, sorts and groups, rebuilds, and drops it, several times.
import sys

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 6
total = 0
for round_number in range(rounds):
    records = [{"id": i, "name": "item-%d" % i, "tags": ["t%d" % (i % 97), "g%d" % (i % 13)], "score": i * 0.5}
               for i in range(60000)]
    index = {}
    for record in records:
        for tag in record["tags"]:
            index.setdefault(tag, []).append(record["id"])
    grouped = sorted(((tag, len(ids)) for tag, ids in index.items()), key=lambda pair: (-pair[1], pair[0]))
    text = ",".join("%s=%d" % pair for pair in grouped)
    total += len(text) + sum(len(ids) for ids in index.values())
print(total)
