"""devtrace.step() and devtrace.step_count(): the process's training steps,
as a Python training loop marks them."""
import threading

import devtrace


def test_steps_are_numbered_in_the_order_of_the_calls():
    first = devtrace.step_count()
    assert first == 0  # nothing in this process made a step before
    for i in range(1, 6):
        assert devtrace.step() is None
        assert devtrace.step_count() == i


def test_steps_from_threads_are_all_counted():
    before = devtrace.step_count()
    threads = [threading.Thread(target=lambda: [devtrace.step() for _ in range(500)]) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    devtrace.step()
    assert devtrace.step_count() == before + 4 * 500 + 1


def test_a_profiler_step_range_is_no_step_while_nothing_watches():
    # range names are looked at only while a capture waits for steps
    before = devtrace.step_count()
    with devtrace.range("ProfilerStep#1000"):
        pass
    assert devtrace.step_count() == before
