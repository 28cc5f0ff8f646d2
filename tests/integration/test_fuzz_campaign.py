"""tests/fuzz/run.sh --keep: a longer fuzzing campaign keeps what it finds.

A stand-in for a libFuzzer binary (DT_FUZZ_BIN_DIR) finds one new input and,
when asked, one crash; the script must merge the input into the kept corpus
and copy the crash there (so that the corpus replay fails until it is
fixed), and without --keep leave the corpus untouched."""
import os
import subprocess

from conftest import SOURCE

FAKE_FUZZER = r"""#!/bin/sh
# libFuzzer's command lines as tests/fuzz/run.sh uses them
merge=0; prefix=./; dirs=""
for a in "$@"; do
  case "$a" in
    -merge=1) merge=1 ;;
    -artifact_prefix=*) prefix=${a#-artifact_prefix=} ;;
    -*) ;;
    *) dirs="$dirs $a" ;;
  esac
done
set -- $dirs
if [ $merge = 1 ]; then
  into=$1; shift
  for d in "$@"; do for f in "$d"/*; do [ -f "$f" ] && cp -n "$f" "$into/"; done; done
  exit 0
fi
echo "new input" > "$1/find-$(basename "$0")"
if [ -n "$FAKE_CRASH" ]; then echo boom > "${prefix}crash-0123abcd"; exit 1; fi
exit 0
"""


def campaign(tmp_path, *args, crash=False):
    bins = tmp_path / "bin"
    bins.mkdir(exist_ok=True)
    fuzzer = bins / "fuzz_trace_reader"
    fuzzer.write_text(FAKE_FUZZER)
    fuzzer.chmod(0o755)
    corpus = tmp_path / "corpus"
    (corpus / "trace_reader").mkdir(parents=True, exist_ok=True)
    (corpus / "trace_reader" / "seed").write_text("{}")
    env = dict(os.environ, DT_FUZZ_BIN_DIR=str(bins), DT_FUZZ_CORPUS=str(corpus))
    if crash:
        env["FAKE_CRASH"] = "1"
    res = subprocess.run(["bash", str(SOURCE / "tests" / "fuzz" / "run.sh"), *args, str(tmp_path / "build"), "1",
                          "fuzz_trace_reader"], env=env, capture_output=True, text=True, timeout=60)
    return res, sorted(p.name for p in (corpus / "trace_reader").iterdir())


def test_a_plain_run_leaves_the_corpus_as_it_is(tmp_path):
    res, kept = campaign(tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    assert kept == ["seed"]


def test_a_kept_campaign_adds_its_finds_to_the_corpus(tmp_path):
    res, kept = campaign(tmp_path, "--keep")
    assert res.returncode == 0, res.stdout + res.stderr
    assert kept == ["find-fuzz_trace_reader", "seed"]
    assert "kept 1 new inputs" in res.stdout


def test_a_kept_campaign_keeps_its_crashes_and_fails(tmp_path):
    res, kept = campaign(tmp_path, "--keep", crash=True)
    assert res.returncode == 1
    assert "crash-0123abcd" in kept and "find-fuzz_trace_reader" in kept
    assert "FUZZ FAILURE in fuzz_trace_reader" in res.stdout
    assert "fuzz.fuzz_trace_reader.replay fails until it is fixed" in res.stdout
