"""OnDemand: the state of a list-watch started by its first user."""

from __future__ import annotations

from endpointslice_operator.controller.cache.on_demand import OnDemand


def test_the_first_want_starts_the_watch_once() -> None:
    state = OnDemand()
    started: list[int] = []
    state.start = lambda: started.append(1)
    assert not state.wanted
    assert state.want("ns/a") is False
    assert state.want("ns/b") is False
    assert state.wanted
    assert started == [1]


def test_synced_once_every_scope_is_listed_and_the_waiting_are_handed_back_once() -> None:
    state = OnDemand()
    state.want("ns/b")
    state.want("ns/a")
    state.want("ns/a")
    assert state.scope_listed("one", 2) is None
    assert state.scope_listed("one", 2) is None  # the same scope again: still one of two
    assert not state.synced
    assert state.scope_listed("two", 2) == ["ns/a", "ns/b"]
    assert state.synced
    # Re-listings later hand nothing back; Services asking now need not wait.
    assert state.scope_listed("one", 2) is None
    assert state.want("ns/c") is True
    assert state.scope_listed("two", 2) is None


def test_a_cluster_wide_watch_is_one_scope() -> None:
    state = OnDemand()
    assert state.want() is False
    assert state.scope_listed(None, 1) == []
    assert state.want() is True
