# Fails when a committed generated page differs from what the generator prints now.
# Regenerate with: build/bin/leakscope_gen_docs PAGE > docs/PAGE.md
execute_process(COMMAND ${GENERATOR} ${PAGE} OUTPUT_VARIABLE generated RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${GENERATOR} ${PAGE} failed")
endif()
file(READ ${DOC} committed)
if(NOT generated STREQUAL committed)
  message(FATAL_ERROR "${DOC} is stale: run 'leakscope_gen_docs ${PAGE} > ${DOC}'")
endif()
