"""`devtrace record --flight-recorder` and its dump triggers as a user runs
them: the options are checked before the program runs and reach it as
DEVTRACE_* variables, and what the traced processes say of their dumps
(the record protocol's dumped, dump_failed and ended lines) is said at the
end, a lost dump making the exit status devtrace's own."""
import re

import pytest

from conftest import DEVTRACE, run

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
