# The layers are CMake targets whose include paths are their contracts
# (harness/CMakeLists.txt): a layer can only include what it links. A
# relative include reaching into another folder ("../interposer/x.h")
# would get around that; none may exist under harness/ and fakes/, no
# layer above the provider may name the simulated device's headers, and the
# front door includes no provider or engine header.
file(GLOB_RECURSE sources ${ROOT}/harness/*.h ${ROOT}/harness/*.cpp ${ROOT}/fakes/*.h ${ROOT}/fakes/*.cpp)
set(violations "")
foreach(source IN LISTS sources)
  file(STRINGS ${source} lines REGEX "^#include \"")
  foreach(line IN LISTS lines)
    if(line MATCHES "\\.\\./")
      string(APPEND violations "${source}: ${line}\n")
    endif()
    if(line MATCHES "verbfault/sim/" AND source MATCHES "/harness/" AND NOT source MATCHES "/harness/provider/"
       AND NOT source MATCHES "/harness/tests/")
      string(APPEND violations "${source}: ${line} (only harness/provider reaches the simulated device)\n")
    endif()
    # The front door reaches the provider only through the interposer
    # (interposer/calls.h): its target can see the provider's headers
    # (the interposer's own headers need them), so the rule is checked here.
    if(source MATCHES "/harness/(frontdoor|control)/" AND
       line MATCHES "\"(verbs|conditions|observation|real_libibverbs|fault_engine|injections)\\.h\"")
      string(APPEND violations "${source}: ${line} (the front door goes through the interposer)\n")
    endif()
  endforeach()
endforeach()
if(violations)
  message(FATAL_ERROR "includes that go around the layers:\n${violations}")
endif()
message(STATUS "layering: no include goes around a layer")
