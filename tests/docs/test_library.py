"""docs/library.md's C, compiled against the public header and the build's
libdevtrace, inside the program it is part of, and run on the TOPSPTI
emulator."""
import subprocess

from conftest import BUILD, SOURCE, check_trace, load_trace

# What the snippets leave to the program around them: an op id and device
# work (a kernel on the emulated device, through the vendor library's
# runtime, found as devtrace finds it).
PROGRAM = """\
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <devtrace/devtrace.h>
%(includes)s

static __attribute__((unused)) uint64_t op_id = 42;
static void launch_kernels(void)
{
    void *emu = dlopen(getenv("DEVTRACE_TOPSPTI_LIBRARY"), RTLD_NOW);
    int (*launch)(int, int, const char *, const int *, const int *, uint64_t) =
        (int (*)(int, int, const char *, const int *, const int *, uint64_t))dlsym(emu, "emu_launch_kernel");
    int (*sync)(int, int) = (int (*)(int, int))dlsym(emu, "emu_synchronize");
    const int grid[3] = {8, 1, 1}, block[3] = {128, 1, 1};
    if (!launch || launch(0, 1, "library_md_kernel", grid, block, 15000) != 0 || sync(-1, -1) != 0) {
        fprintf(stderr, "the emulator's runtime failed\\n");
        exit(3);
    }
}
#define work() launch_kernels()

int main(void)
{
%(body)s
    return 0;
}
"""


def build_and_run(sandbox, block, env=None):
    """The block compiled into PROGRAM (its #include lines at the top, the
    rest in main, `...` as device work) and run in the sandbox."""
    sandbox.ran.add(block.where)
    lines = block.text.splitlines()
    includes = "\n".join(l for l in lines if l.startswith("#include"))
    body = "\n".join("    work();" if l.lstrip().startswith("...") else "    " + l for l in lines
                     if not l.startswith("#include"))
    src = sandbox / f"snippet_{block.line}.c"
    src.write_text(PROGRAM % {"includes": includes, "body": body})
    exe = sandbox / f"snippet_{block.line}"
    cc = subprocess.run(["cc", "-std=c11", "-Wall", "-Werror", "-I", str(SOURCE / "include"), str(src), "-o", str(exe),
                         "-L", str(BUILD), "-ldevtrace", f"-Wl,-rpath,{BUILD}", "-ldl"], capture_output=True, text=True)
    assert cc.returncode == 0, f"{block.where}:\n{cc.stderr}"
    res = subprocess.run([str(exe)], cwd=sandbox.root, env=dict(sandbox.env, **(env or {})), capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, f"{block.where}:\n{res.stdout}{res.stderr}"
    return res


def test_twenty_lines(documented, sandbox):
    block, = documented
    res = build_and_run(sandbox, block)
    assert res.stdout.strip() == "lost 0 records", res.stdout + res.stderr
    trace = check_trace(sandbox / "step.json.gz")
    kernel, = [e for e in trace["traceEvents"] if e.get("cat") == "kernel"]
    assert kernel["name"] == "library_md_kernel" and kernel["args"]["External id"] == 42
    assert any(e.get("name") == "forward" and e.get("ph") == "X" for e in trace["traceEvents"])


def test_a_c_program(documented, sandbox):
    block, = documented
    build_and_run(sandbox, block, env={"DEVTRACE_OUTPUT": "program.json"})
    trace = load_trace(sandbox / "program.json")
    assert [e["name"] for e in trace["traceEvents"] if e.get("cat") == "kernel"] == ["library_md_kernel"]
    check_trace(sandbox / "program.json")
