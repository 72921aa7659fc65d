# Links the f64 build of the CPU kernels (kernels/cpu/f64_build.h) into one object and renames
# every global symbol it defines with an `_f64` suffix, so that it links beside the f32 build.
# Called by kernels/CMakeLists.txt with LD, NM, OBJCOPY, OUT and OBJS (paths joined by ":": a
# ";" would split the shell command).
string(REPLACE ":" ";" objects "${OBJS}")
execute_process(COMMAND ${LD} -r -o ${OUT}.tmp ${objects} RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "f64 kernels: ${LD} -r failed")
endif()
execute_process(COMMAND ${NM} -g --defined-only --format=posix ${OUT}.tmp
                OUTPUT_VARIABLE symbols RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "f64 kernels: ${NM} failed")
endif()
string(REPLACE "\n" ";" lines "${symbols}")
set(map "")
foreach(line IN LISTS lines)
  string(REGEX MATCH "^[A-Za-z][A-Za-z0-9_]*" name "${line}")
  if(name) # names the compiler or a sanitizer made (leading _) are left alone
    string(APPEND map "${name} ${name}_f64\n")
  endif()
endforeach()
file(WRITE ${OUT}.syms "${map}")
execute_process(COMMAND ${OBJCOPY} --redefine-syms=${OUT}.syms ${OUT}.tmp ${OUT} RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "f64 kernels: ${OBJCOPY} failed")
endif()
