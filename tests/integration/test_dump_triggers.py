"""`devtrace record --flight-recorder` and its dump triggers as a user runs
them: the options are checked before the program runs and reach it as
DEVTRACE_* variables; what the traced processes say of their dumps (the
record protocol's dumped, dump_failed and ended lines) is said at the end,
a lost dump making the exit status devtrace's own; and, on the emulator, a
slow step, a storm of signals and a failed end each give the dumps they
should, with the program's exit status kept."""
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from conftest import DEVTRACE, EMU_RUN, TOPSPTI_EMU, WORKLOAD, check_trace, needs_emulator, run

ENV_OF = {
    "--dump-on-slow-step": "DEVTRACE_DUMP_ON_SLOW_STEP",
    "--dump-on-stall": "DEVTRACE_DUMP_ON_STALL",
    "--dump-on-signal": "DEVTRACE_DUMP_ON_SIGNAL",
    "--dump-cooldown": "DEVTRACE_DUMP_COOLDOWN",
    "--dump-max": "DEVTRACE_DUMP_MAX",
    "--dump-warmup": "DEVTRACE_DUMP_WARMUP",
    "--dump-grace": "DEVTRACE_DUMP_GRACE",
}


def environment_seen(tmp_path, *options):
    """The DEVTRACE_ variables the program was run with."""
    seen = tmp_path / "env.txt"
    res = run([DEVTRACE, "record", "--backend", "null", "-o", tmp_path / "t.json", *options, "--",
               "sh", "-c", f"env > '{seen}'"])
    assert res.returncode == 0, res.stderr
    return dict(line.split("=", 1) for line in seen.read_text().splitlines()
                if line.startswith("DEVTRACE_"))


def test_the_options_reach_the_program_as_variables(tmp_path):
    env = environment_seen(tmp_path, "--flight-recorder=64M", "--dump-on-slow-step=3", "--dump-on-stall", "90",
                           "--dump-on-signal=USR2", "--dump-cooldown=10s", "--dump-max=2", "--dump-warmup=4",
                           "--dump-grace=500ms")
    assert env["DEVTRACE_FLIGHT_RECORDER"] == "64M"
    assert env["DEVTRACE_DUMP_ON_SLOW_STEP"] == "3"
    assert env["DEVTRACE_DUMP_ON_STALL"] == "90"
    assert env["DEVTRACE_DUMP_ON_SIGNAL"] == "USR2"
    assert env["DEVTRACE_DUMP_COOLDOWN"] == "10s"
    assert env["DEVTRACE_DUMP_MAX"] == "2"
    assert env["DEVTRACE_DUMP_WARMUP"] == "4"
    assert env["DEVTRACE_DUMP_GRACE"] == "500ms"


def test_the_flight_recorder_has_a_default_size_and_is_off_unless_asked(tmp_path):
    assert environment_seen(tmp_path, "--flight-recorder")["DEVTRACE_FLIGHT_RECORDER"] == "on"
    env = environment_seen(tmp_path)
    assert not [k for k in env if k.startswith("DEVTRACE_DUMP_") or k == "DEVTRACE_FLIGHT_RECORDER"], env


@pytest.mark.parametrize("options,message", [
    (["--flight-recorder=0"], "--flight-recorder takes a size above 0"),
    (["--flight-recorder=lots"], "--flight-recorder takes a size above 0"),
    (["--flight-recorder=1.5G"], "--flight-recorder takes a size above 0"),
    (["--flight-recorder", "--dump-on-slow-step=1"], "--dump-on-slow-step (DEVTRACE_DUMP_ON_SLOW_STEP) takes a "
                                                     "factor above 1"),
    (["--flight-recorder", "--dump-on-signal=TERM"], "takes USR1, USR2, RTMIN, RTMIN+N or RTMAX-N, not 'TERM'"),
    (["--flight-recorder", "--dump-on-signal=KILL"], "not 'KILL'"),
    (["--flight-recorder", "--dump-on-stall=0"], "--dump-on-stall (DEVTRACE_DUMP_ON_STALL) takes a duration above 0"),
    (["--flight-recorder", "--dump-cooldown=soon"], "--dump-cooldown (DEVTRACE_DUMP_COOLDOWN) takes a duration"),
    (["--flight-recorder", "--dump-max=-1"], "--dump-max (DEVTRACE_DUMP_MAX) takes a count of dumps"),
    (["--flight-recorder", "--dump-max"], "--dump-max (DEVTRACE_DUMP_MAX) takes a count of dumps, not '--'"),
    (["--dump-on-stall=30"], "--dump-on-stall=30 needs --flight-recorder"),
    (["--on-demand", "--flight-recorder"], "--on-demand and --flight-recorder do not combine"),
])
def test_bad_options_stop_record_before_the_program_runs(tmp_path, options, message):
    ran = tmp_path / "ran"
    res = run([DEVTRACE, "record", "-o", tmp_path / "t.json", *options, "--", "touch", ran])
    assert res.returncode == 2, res.stderr
    assert message in res.stderr, res.stderr
    assert not ran.exists()


def program_that_reports(tmp_path, lines):
    """A program that speaks the record protocol itself (the injection
    library disabled): each line with its own pid, tab-separated."""
    script = tmp_path / "report.sh"
    body = "".join(f"printf '%s\\t{line}\\n' $$ >> \"$DEVTRACE_RECORD_LOG\"\n" for line in lines)
    script.write_text(body)
    return ["sh", str(script)]


def test_dumps_and_the_flight_recorders_end_are_said(tmp_path):
    program = program_that_reports(tmp_path, [
        "started\\tpath=/x/t.json",
        "dumped\\tpath=/x/t.dump1.json\\tmessage=dump 1: slow step 31",
        "dumped\\tpath=/x/t.dump2.json\\tmessage=dump 2: signal SIGUSR2",
        "ended\\tmessage=2 dumps written; dumps skipped: 3 (cooldown), 1 (cap)",
    ])
    res = run([DEVTRACE, "record", "-o", tmp_path / "t.json", "--flight-recorder", "--", *program],
              env={"DEVTRACE_DISABLE": "1"})
    assert res.returncode == 0, res.stderr
    pid = re.search(r"process (\d+): dump written", res.stderr).group(1)
    assert f"process {pid}: dump written: /x/t.dump1.json (dump 1: slow step 31)\n" in res.stderr
    assert f"process {pid}: dump written: /x/t.dump2.json (dump 2: signal SIGUSR2)\n" in res.stderr
    assert (f"process {pid}: flight recorder: 2 dumps written; dumps skipped: 3 (cooldown), 1 (cap)\n"
            in res.stderr)
    assert "traced 1 process: 0 traces written; 2 dumps written\n" in res.stderr, res.stderr
    assert "ended without writing" not in res.stderr


def test_a_lost_dump_is_devtraces_own_failure(tmp_path):
    program = program_that_reports(tmp_path, [
        "started\\tpath=/x/t.json",
        "dump_failed\\tpath=/x/t.dump1.json\\tmessage=dump 1: cannot create /x/t.dump1.json: No space left",
        "ended\\tmessage=0 dumps written",
    ])
    res = run([DEVTRACE, "record", "-o", tmp_path / "t.json", "--flight-recorder", "--", *program],
              env={"DEVTRACE_DISABLE": "1"})
    assert res.returncode == 125, res.stderr
    assert "a dump could not be written: dump 1: cannot create /x/t.dump1.json: No space left\n" in res.stderr
    assert "0 dumps written, 1 lost" in res.stderr, res.stderr


# ---------------------------------------------------------------------------
# On the emulator
# ---------------------------------------------------------------------------
def steps(count, sleep_us, range_name="work", kernel="normal_kernel"):
    return f"""  repeat {count} {{
    step
    range "{range_name}" {{
      kernel device=0 stream=1 name="{kernel}" dur_us=100
      sync device=0 stream=1
    }}
    sleep_us {sleep_us}
  }}
"""


def scenario(tmp_path, body):
    scn = tmp_path / "steps.scn"
    scn.write_text(f'vendor topspti\ndevices 1\nthread "train" {{\n{body}  step\n}}\n')
    return scn


def dumps_in(folder):
    return sorted(p.name for p in folder.iterdir() if ".dump" in p.name)


@needs_emulator()
def test_one_slow_step_gives_one_dump_that_holds_it(tmp_path):
    """12 steps of 200 ms, one of 2 s, then 2 s more of 200 ms steps: one
    dump, made after the grace period (1 s), holding the slow step's range
    and kernel; the program exits 0, so no other trace is written. (Steps of
    200 ms: only a pause of over 400 ms could make one look slow.)"""
    scn = scenario(tmp_path, steps(12, 200000) + steps(1, 2000000, "the_slow_one", "slow_kernel") + steps(10, 200000))
    out = tmp_path / "t.json"
    res = run([DEVTRACE, "record", "--flight-recorder=256M", "--dump-on-slow-step=3", "-o", out, "--",
               EMU_RUN, "--quiet", scn], env={"DEVTRACE_TOPSPTI_LIBRARY": str(TOPSPTI_EMU)})
    assert res.returncode == 0, res.stderr
    assert dumps_in(tmp_path) == ["t.dump1.json"], res.stderr
    assert not out.exists()
    dump = tmp_path / "t.dump1.json"
    assert f"dump written: {dump} (dump 1: slow step 13: " in res.stderr, res.stderr
    trace = check_trace(dump)
    names = {e["name"] for e in trace["traceEvents"] if e.get("cat") in ("user_annotation", "kernel")}
    assert {"the_slow_one", "slow_kernel"} <= names, names
    note = trace["devtrace"]["notes"]["flight_recorder.dump1"]
    assert note.startswith("slow step 13: ") and "dumps skipped: 0 (cooldown), 0 (cap)" in note, note
    # the dump was made after the grace period: steps that began in it are in its window
    ranges = sorted(e["ts"] for e in trace["traceEvents"] if e.get("cat") == "user_annotation")
    slow = [e for e in trace["traceEvents"] if e.get("name") == "the_slow_one"][0]
    assert ranges[-1] >= slow["ts"] + slow["dur"] + 900_000, (ranges[-1], slow)


@needs_emulator()
def test_a_stall_gives_one_dump(tmp_path):
    """5 steps, then 3 s without one, then 2 more: one dump, of that stall."""
    scn = scenario(tmp_path, steps(5, 50000) + "  sleep_us 3000000\n" + steps(2, 50000))
    out = tmp_path / "t.json"
    res = run([DEVTRACE, "record", "--flight-recorder=64M", "--dump-on-stall=1", "-o", out, "--",
               EMU_RUN, "--quiet", scn], env={"DEVTRACE_TOPSPTI_LIBRARY": str(TOPSPTI_EMU)})
    assert res.returncode == 0, res.stderr
    assert dumps_in(tmp_path) == ["t.dump1.json"], res.stderr
    note = check_trace(tmp_path / "t.dump1.json")["devtrace"]["notes"]["flight_recorder.dump1"]
    assert re.match(r"stall: no step for \d+\.\d{3} s after step 5;", note), note


def wait_for_handler(pid, program, sig, timeout=30):
    """Until process pid runs program and catches sig (its handler is in
    place; before the exec, record's own forwarding handler is there)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            running = os.path.realpath(f"/proc/{pid}/exe") == os.path.realpath(program)
            status = open(f"/proc/{pid}/status").read()
        except OSError:
            return False
        if not running:
            time.sleep(0.01)
            continue
        caught = int(re.search(r"^SigCgt:\s*([0-9a-f]+)", status, re.M).group(1), 16)
        if caught & (1 << (sig - 1)):
            return True
        time.sleep(0.01)
    return False


@needs_emulator()
def test_a_thousand_signals_give_at_most_the_capped_dumps(tmp_path):
    scn = scenario(tmp_path, steps(300, 10000))
    out = tmp_path / "t.json"
    env = dict(os.environ, DEVTRACE_TOPSPTI_LIBRARY=str(TOPSPTI_EMU))
    env.pop("LD_PRELOAD", None)
    proc = subprocess.Popen([str(DEVTRACE), "record", "--flight-recorder=64M", "--dump-on-signal=USR2",
                             "--dump-cooldown=0", "--dump-max=2", "-o", str(out), "--", str(EMU_RUN), "--quiet",
                             str(scn)], env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    children = []
    while not children and time.monotonic() < deadline:
        children = [int(p) for p in open(f"/proc/{proc.pid}/task/{proc.pid}/children").read().split()]
    assert children and wait_for_handler(children[0], EMU_RUN, signal.SIGUSR2)
    for _ in range(1000):
        os.kill(children[0], signal.SIGUSR2)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    made = dumps_in(tmp_path)
    assert 1 <= len(made) <= 2 and made == [f"t.dump{n}.json" for n in range(1, len(made) + 1)], (made, err)
    for name in made:
        check_trace(tmp_path / name)
    said = re.search(r"flight recorder: (\d) dumps? written; dumps skipped: 0 \(cooldown\), (\d+) \(cap\)", err)
    assert said and int(said.group(1)) == len(made), err


def test_a_failed_program_dumps_at_its_end_and_keeps_its_status(tmp_path):
    out = tmp_path / "t.json"
    res = run([DEVTRACE, "record", "--backend", "null", "--flight-recorder=8M", "-o", out, "--",
               WORKLOAD, "--exit", "3", "0"])
    assert res.returncode == 3, res.stderr
    assert dumps_in(tmp_path) == ["t.dump1.json"], res.stderr
    trace = check_trace(tmp_path / "t.dump1.json")
    assert trace["devtrace"]["notes"]["flight_recorder.dump1"].startswith("the program exited with status 3")
    assert not out.exists()

    ok = tmp_path / "ok"
    ok.mkdir()
    res = run([DEVTRACE, "record", "--backend", "null", "--flight-recorder=8M", "-o", ok / "t.json", "--",
               WORKLOAD, "0"])
    assert res.returncode == 0, res.stderr
    assert dumps_in(ok) == [] and not (ok / "t.json").exists()
    assert "the program did not fail: the ring is not written" in res.stderr


def test_a_vfork_childs_exit_status_is_not_the_programs(tmp_path):
    """Python starts a program that is not there through vfork: the child's
    _exit(255) shares the parent's memory, and must not make the parent,
    which exits 0, look failed."""
    out = tmp_path / "t.json"
    program = ("import subprocess\n"
               "try:\n    subprocess.run(['/nonexistent/program'])\n"
               "except FileNotFoundError:\n    pass\n")
    res = run([DEVTRACE, "record", "--backend", "null", "--flight-recorder=8M", "-o", out, "--",
               sys.executable, "-c", program])
    assert res.returncode == 0, res.stderr
    assert dumps_in(tmp_path) == [], res.stderr


def test_a_program_ended_by_a_signal_dumps_at_its_end(tmp_path):
    out = tmp_path / "t.json"
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    proc = subprocess.Popen([str(DEVTRACE), "record", "--backend", "null", "--flight-recorder=8M", "-o", str(out),
                             "--", str(WORKLOAD), "30000"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    assert proc.stdout.readline() == "ready\n"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert dumps_in(tmp_path) == ["t.dump1.json"], err
    note = check_trace(tmp_path / "t.dump1.json")["devtrace"]["notes"]["flight_recorder.dump1"]
    assert note.startswith("the program was ended by signal 15"), note


def test_a_program_reached_through_execs_and_forks_says_its_flight_recorder_once(tmp_path):
    """A launcher that execs (a pyenv shim, `sh -c 'exec ...'`) ends a flight
    recorder with each program it runs in one pid, and forked helpers each
    end one: only the traced program's last end is said, once."""
    out = tmp_path / "t.json"
    res = run([DEVTRACE, "record", "--backend", "null", "--flight-recorder=8M", "-o", out, "--",
               "sh", "-c", "true; /bin/true; exec sh -c 'true; exec sh -c :'"])
    assert res.returncode == 0, res.stderr
    ends = re.findall(r"devtrace: process (\d+): flight recorder: (.*)\n", res.stderr)
    assert len(ends) == 1, res.stderr
    assert ends[0][1] == ("0 dumps written; dumps skipped: 0 (cooldown), 0 (cap); the program did not fail: "
                          "the ring is not written"), res.stderr
    assert "devtrace: traced 2 processes: 0 traces written\n" in res.stderr, res.stderr  # sh and /bin/true
