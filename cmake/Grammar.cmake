# Build-time generation of lexers (re2c) and parsers (Lemon). Their output is never committed.
# re2c warnings and Lemon conflicts are build errors.

find_program(RE2C re2c REQUIRED)
find_program(LEMON lemon REQUIRED)
find_file(LEMPAR lempar.c PATHS /usr/share/lemon /usr/local/share/lemon REQUIRED NO_DEFAULT_PATH)

# fr_re2c(<target> <input.re> <output-stem>): adds <output-stem>.c, generated from input, to target.
function(fr_re2c target input stem)
  set(out ${CMAKE_BINARY_DIR}/grammar/${stem}.c)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/grammar
    COMMAND ${RE2C} -W -Werror --no-generation-date -o ${out} ${input}
    DEPENDS ${input}
    COMMENT "re2c ${input}")
  target_sources(${target} PRIVATE ${out})
endfunction()

# fr_lemon(<target> <input.y> <output-stem>): adds <output-stem>.c and <output-stem>.h (token codes),
# generated from input, to target. Lemon's exit status is non-zero on any conflict.
function(fr_lemon target input stem)
  set(dir ${CMAKE_BINARY_DIR}/grammar)
  add_custom_command(
    OUTPUT ${dir}/${stem}.c ${dir}/${stem}.h
    COMMAND ${CMAKE_COMMAND} -E make_directory ${dir}
    COMMAND ${CMAKE_COMMAND} -E copy ${input} ${dir}/${stem}.y
    COMMAND ${LEMON} -q -s -T${LEMPAR} -d${dir} ${dir}/${stem}.y
    DEPENDS ${input}
    COMMENT "lemon ${input}")
  target_sources(${target} PRIVATE ${dir}/${stem}.c)
  # Lemon's template does not compile clean under every warning we enable.
  set_source_files_properties(${dir}/${stem}.c PROPERTIES COMPILE_OPTIONS "-Wno-unused-variable;-Wno-unused-but-set-variable;-Wno-sign-compare;-Wno-implicit-fallthrough")
endfunction()
