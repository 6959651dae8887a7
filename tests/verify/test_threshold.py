"""`plan_threshold`: dedup's threshold options as a threshold and a radius."""

import pytest

from gpusimhash.verify._threshold import candidate_radius, plan_threshold


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({}, ("cosine", 0.8, candidate_radius(128, min_cosine=0.8), True)),
        ({"min_jaccard": 0.7}, ("jaccard", 0.7, candidate_radius(128, min_jaccard=0.7), True)),
        ({"max_distance": 20, "min_cosine": 0.95}, ("cosine", 0.95, 20, True)),
        ({"max_distance": 500}, ("cosine", 0.8, 128, True)),
        ({"verify": False}, ("cosine", 0.8, 26, False)),
        ({"verify": False, "min_jaccard": 0.6}, ("jaccard", 0.6, 29, False)),
        ({"verify": False, "max_distance": 64}, ("cosine", pytest.approx(0.0), 64, False)),
    ],
)
def test_plan_threshold(kwargs, expected):
    plan = plan_threshold(128, **kwargs)
    assert (plan.measure, plan.value, plan.radius, plan.verify) == expected


def test_plan_threshold_refuses_two_thresholds_without_verification():
    with pytest.raises(ValueError, match="give one of max_distance, min_cosine and min_jaccard"):
        plan_threshold(64, verify=False, max_distance=3, min_cosine=0.9)
    with pytest.raises(ValueError, match="at most one of min_cosine and min_jaccard"):
        plan_threshold(64, min_cosine=0.9, min_jaccard=0.9)
