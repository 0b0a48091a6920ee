"""pacing.Pace on a clock the test moves: the timeout follows the work in flight, within bounds."""

from __future__ import annotations

from irforge.common.pacing import CEILING_S, Pace


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_timeout_scales_with_the_work_in_flight_between_the_floor_and_the_ceiling():
    clock = Clock()
    pace = Pace(60.0, clock=clock)
    first = pace.start(8)
    assert first.timeout_s == 60.0 and not pace.measured     # nothing measured: the spec's timeout
    clock.now = 20.0                                          # 8 texts in 20 s: 2.5 s a text
    pace.answered(first)
    tickets = [pace.start(16) for _ in range(4)]              # 16, 32, 48, 64 texts in flight
    assert [t.timeout_s for t in tickets] == [120.0, 240.0, 360.0, 480.0]
    big = pace.start(64)                                      # 128 texts in flight: 960 s, capped
    assert big.timeout_s == CEILING_S
    for ticket in [*tickets, big]:
        pace.abandoned(ticket)
    assert pace.start(1).timeout_s == 60.0                    # 7.5 s scaled: never below the floor
    patient = Pace(900.0, clock=clock)
    ticket = patient.start(100)
    clock.now += 300.0
    patient.answered(ticket)                                  # 3 s a text: 100 texts would be 900 s x 3
    assert patient.start(100).timeout_s == 900.0              # a timeout_s above the ceiling holds
