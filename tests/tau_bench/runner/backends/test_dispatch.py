"""The Ray driver's bookkeeping (`Dispatch`): caps, refills, and dead workers' episodes."""

from __future__ import annotations

from tau_bench.runner.backends.dispatch import Dispatch

KEYS = [(i, 0) for i in range(10)]


def test_each_worker_gets_its_share_and_the_cluster_cap_holds() -> None:
    plan = Dispatch(KEYS, workers=2, cap=3, max_restarts=1)
    assert plan.take(0) == [(0, 0), (1, 0)]  # its share: ceil(3 / 2)
    assert plan.take(1) == [(2, 0)]  # the cluster cap leaves one
    assert plan.take(0) == [] and plan.in_flight == 3
    assert plan.finished(0, (0, 0))
    assert plan.take(1) == [(3, 0)]  # the freed slot, to whoever asks
    assert plan.busy(0) and plan.busy(1)


def test_a_record_is_accepted_once_and_only_from_where_it_runs() -> None:
    plan = Dispatch(KEYS[:2], workers=2, cap=4, max_restarts=1)
    plan.take(0)
    assert not plan.finished(1, (0, 0))  # not running on worker 1
    assert plan.finished(0, (0, 0))
    assert not plan.finished(0, (0, 0))  # a second copy is not stored
    assert not plan.finished(0, (9, 9))


def test_a_dead_workers_episodes_go_back_first_in_their_order() -> None:
    plan = Dispatch(KEYS[:6], workers=2, cap=4, max_restarts=1)
    plan.take(0), plan.take(1)  # 0,1 on worker 0; 2,3 on worker 1
    plan.died(0, "ActorDiedError: killed")
    assert not plan.busy(0) and plan.errors == []
    assert list(plan.queue) == [(0, 0), (1, 0), (4, 0), (5, 0)]
    assert plan.take(1) == []  # worker 1 is full; the restarted worker 0 takes them
    assert plan.take(0) == [(0, 0), (1, 0)]


def test_an_episode_whose_worker_keeps_dying_is_given_up_with_a_line() -> None:
    plan = Dispatch([(7, 1)], workers=2, cap=2, max_restarts=1)
    plan.take(0)
    plan.died(0, "boom")
    plan.take(1)
    plan.died(1, "boom again\nsecond line")
    assert not plan.queue and plan.in_flight == 0
    assert plan.errors == [
        "episode 7 trial 1 not run: its worker died 2 times (--resume runs it): boom again\n"
        "second line"
    ]


def test_a_worker_past_its_restarts_gets_no_work_and_none_left_gives_all_up() -> None:
    plan = Dispatch(KEYS[:4], workers=1, cap=2, max_restarts=0)
    plan.take(0)
    plan.died(0, "gone")  # attempts 1 > 0: both given up; the worker is done for
    assert plan.live() == [] and plan.take(0) == []
    plan.give_up_if_no_workers()
    assert not plan.queue
    assert [e.split(":")[0] for e in plan.errors] == [
        "episode 0 trial 0 not run",
        "episode 1 trial 0 not run",
        "episode 2 trial 0 not run",
        "episode 3 trial 0 not run",
    ]
    assert "no worker left" in plan.errors[-1]


def test_an_episode_lost_on_a_live_worker_is_reported_once() -> None:
    plan = Dispatch(KEYS[:1], workers=1, cap=1, max_restarts=1)
    plan.take(0)
    plan.lost(0, (0, 0), "KeyError: 'x'")
    plan.lost(0, (0, 0), "KeyError: 'x'")
    assert len(plan.errors) == 1 and "ended without a record" in plan.errors[0]
    assert not plan.busy(0)
