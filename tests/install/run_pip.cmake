# Script mode: `pip install --no-build-isolation .` of SOURCE_DIR (pyproject.toml) with PYTHON
# into a fresh --target directory, scikit-build-core's build tree kept in BUILD_DIR so that a
# rerun only rebuilds what changed (seconds when nothing did), then import the installed
# package from there, FP8Q_TORCH_LIBRARY unset: fp8q/_lib/libfp8q_torch.so must be the one
# loaded, and 465 -> e4m3fn must saturate to 448. WORK_DIR: scratch (target/, the cwd).
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
function(run)
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY ${WORK_DIR} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}")
  endif()
endfunction()
run(${PYTHON} -m pip install --no-build-isolation --no-deps --no-index --disable-pip-version-check -q
    --target ${WORK_DIR}/target --config-settings=build-dir=${BUILD_DIR} ${SOURCE_DIR})
# The cwd (WORK_DIR) is first on sys.path for -c: it holds no fp8q, so the import is target's.
set(check [=[
import pathlib, sys
import fp8q, torch
target = pathlib.Path(sys.argv[1]).resolve()
lib = fp8q._library.load()
assert pathlib.Path(fp8q.__file__).resolve().is_relative_to(target), fp8q.__file__
assert lib.resolve() == target / "fp8q" / "_lib" / "libfp8q_torch.so", lib
q = fp8q.convert(torch.tensor([465.0, -1.0]), torch.float8_e4m3fn)
assert q.dtype == torch.float8_e4m3fn and q.float().tolist() == [448.0, -1.0], q
print("pip wheel: ok", lib)
]=])
run(${CMAKE_COMMAND} -E env --unset=FP8Q_TORCH_LIBRARY PYTHONPATH=${WORK_DIR}/target
    ${PYTHON} -c "${check}" ${WORK_DIR}/target)
