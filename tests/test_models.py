"""Runtime models: the paper's formulas on hand-made data, fits that recover known polynomials,
Lasso sparsity, error metrics and scikit-learn composition."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import cross_val_score
from xlat import models

# Two layouts: all-4KB (many misses and walk cycles) and all-2MB (few). Columns H, M, C.
X2 = np.array([[7000.0, 1000.0, 40000.0], [500.0, 100.0, 3000.0]])
R2 = np.array([200000.0, 150000.0])
PROBE = np.array([[2000.0, 500.0, 20000.0]])


def test_basu_by_hand():
    m = models.Basu().fit(X2, R2)
    # alpha = C4K/M4K = 40000/1000 = 40; beta = R4K - C4K = 160000.
    assert m.coef_.tolist() == [0.0, 40.0, 0.0] and m.intercept_ == 160000.0
    assert m.predict(PROBE)[0] == 160000 + 40 * 500


def test_gandhi_by_hand():
    m = models.Gandhi().fit(X2, R2)
    # alpha = 40; beta = R2M - C2M = 147000.
    assert m.predict(PROBE)[0] == 147000 + 40 * 500


def test_pham_by_hand():
    m = models.Pham().fit(X2, R2)
    # beta = R4K - C4K - 7*H4K = 200000 - 40000 - 49000 = 111000.
    assert m.intercept_ == 111000.0
    assert m.predict(PROBE)[0] == 111000 + 7 * 2000 + 20000
    assert (
        models.Pham(l2_latency=9).fit(X2, R2).predict(PROBE)[0]
        == 200000 - 40000 - 9 * 7000 + 9 * 2000 + 20000
    )


def test_alam_by_hand():
    m = models.Alam().fit(X2, R2)
    assert m.predict(PROBE)[0] == 150000 - 3000 + 20000


def test_yaniv_passes_through_both_points():
    m = models.Yaniv().fit(X2, R2)
    np.testing.assert_allclose(m.predict(X2), R2)
    alpha = (200000 - 150000) / (40000 - 3000)
    assert m.predict(PROBE)[0] == pytest.approx(150000 + alpha * (20000 - 3000))


def test_reference_points_can_be_chosen():
    X = np.vstack([X2, [[1.0, 1.0, 100.0]]])  # a third row with fewer walk cycles than 2MB
    R = np.append(R2, 140000.0)
    default = models.Alam().fit(X, R)  # min_C is now row 2
    assert default.intercept_ == 140000 - 100
    explicit = models.Alam(point_2m=1).fit(X, R)
    assert explicit.intercept_ == 150000 - 3000
    with pytest.raises(ValueError, match="point_2m=7"):
        models.Alam(point_2m=7).fit(X, R)


def test_degenerate_reference_points_are_explained():
    with pytest.raises(ValueError, match="no TLB misses"):
        models.Basu().fit([[0, 0, 10], [0, 0, 5]], [2.0, 1.0])
    with pytest.raises(ValueError, match="same walk cycles"):
        models.Yaniv().fit([[0, 1, 10], [0, 2, 10]], [2.0, 1.0])
    with pytest.raises(ValueError, match="shape"):
        models.Yaniv().fit([[1, 2]], [1.0])
    with pytest.raises(ValueError, match="positive"):
        models.Yaniv().fit(X2, [1.0, -1.0])


@pytest.mark.parametrize("degree", [1, 2, 3])
def test_poly_recovers_a_known_polynomial(degree):
    rng = np.random.default_rng(degree)
    C = rng.uniform(1e6, 1e9, 40)
    coefs = [5e9, 0.8, -3e-10, 2e-19][: degree + 1]
    R = sum(c * C**k for k, c in enumerate(coefs))
    X = np.column_stack([np.zeros_like(C), np.zeros_like(C), C])
    m = models.Poly(degree).fit(X, R)
    assert models.max_error(R, m.predict(X)) < 1e-9
    # A lower degree cannot fit a genuinely curved runtime as well.
    if degree > 1:
        assert models.max_error(R, models.Poly(degree - 1).fit(X, R).predict(X)) > 1e-6


def synthetic_layouts(n=54, seed=0, noise=0.002):
    """Layouts whose runtime depends on M (cubic) but not on H; C tracks M with scatter."""
    rng = np.random.default_rng(seed)
    M = rng.uniform(0, 1e7, n)
    C = M * rng.uniform(25, 35, n)
    H = rng.uniform(1e6, 5e7, n)
    R = 1e10 + 300 * M + 2e-5 * M**2 - 1.5e-12 * M**3
    R *= 1 + rng.normal(0, noise, n)
    return np.column_stack([H, M, C]), R


def test_mosmodel_is_accurate_and_sparse():
    X, R = synthetic_layouts()
    m = models.Mosmodel().fit(X, R)
    assert models.max_error(R, m.predict(X)) < 0.01
    assert len(m.terms_) == 19 and m.terms_[:3] == ["H", "M", "C"]
    # It beats the linear-in-C model on curved data.
    assert models.max_error(R, m.predict(X)) < models.max_error(R, models.Poly(1).fit(X, R).predict(X))


def test_mosmodel_keeps_few_terms_when_runtime_is_linear_in_c():
    counts = []
    for seed in range(10):
        rng = np.random.default_rng(seed)
        M = rng.uniform(0, 1e7, 54)
        C = M * rng.uniform(25, 35, 54)
        H = rng.uniform(1e6, 5e7, 54)
        X = np.column_stack([H, M, C])
        R = (1e10 + 0.7 * C) * (1 + rng.normal(0, 0.001, 54))
        m = models.Mosmodel().fit(X, R)
        assert m.coef_[m.terms_.index("C")] != 0, seed
        assert models.max_error(R, m.predict(X)) < 0.01
        counts.append(m.n_nonzero_)
    # Of 19 terms, Lasso typically keeps a handful (C, and a few correlated stand-ins).
    assert np.median(counts) <= 4, counts


def test_mosmodel_fixed_alpha_and_too_few_samples():
    X, R = synthetic_layouts(n=10)
    huge = models.Mosmodel(alpha=10.0).fit(X, R)
    assert huge.n_nonzero_ == 0  # everything penalised away: a constant model
    np.testing.assert_allclose(huge.predict(X), R.mean(), rtol=1e-12)
    with pytest.raises(ValueError, match="at least 2 samples"):
        models.Mosmodel().fit(X[:1], R[:1])


def test_error_metrics_by_hand():
    y, p = np.array([100.0, 200.0, 400.0]), np.array([110.0, 200.0, 380.0])
    np.testing.assert_allclose(models.relative_errors(y, p), [0.1, 0.0, 0.05])
    assert models.max_error(y, p) == pytest.approx(0.1)
    # The exact prediction is left out of the geometric mean.
    assert models.geomean_error(y, p) == pytest.approx(np.sqrt(0.1 * 0.05))


def test_cross_validation_and_sklearn_composition():
    # Runtime exactly cubic in C: held-out folds are predicted exactly by poly3, not by poly1.
    C = np.linspace(1e6, 1e9, 30)
    Xc = np.column_stack([np.zeros_like(C), np.zeros_like(C), C])
    Rc = 5e9 + 0.8 * C - 3e-10 * C**2 + 2e-19 * C**3
    assert models.cross_val_errors(models.Poly(3), Xc, Rc, k=5, seed=1)["max"] < 1e-8
    lin = models.cross_val_errors(models.Poly(1), Xc, Rc, k=5, seed=1)
    assert lin["max"] > 1e-3 and 0 < lin["geomean"] <= lin["max"]
    X, R = synthetic_layouts(seed=3)
    scores = cross_val_score(models.Mosmodel(), X, R, cv=3)
    assert scores.shape == (3,) and (scores > 0.9).all()
    for m in models.prior_models().values():
        c = clone(m)
        assert c.get_params() == m.get_params()
        with pytest.raises(NotFittedError):
            c.predict(X)
        assert c.fit(X, R) is c


def test_single_input_r2_ranks_the_true_predictor():
    X, R = synthetic_layouts(noise=0.0)
    r2 = models.single_input_r2(X, R)
    assert r2["M"] > 0.95 and r2["C"] > 0.8 and r2["H"] < 0.2


def test_thesis_analytical_models():
    assert models.expected_cycles_2m(1000, 300, 50) == 750
    assert models.perfect_mmu_overhead(10, 1000, "LLC") == pytest.approx(0.43)
    assert models.perfect_mmu_overhead(10, 1000, "L2") == pytest.approx(0.20)
    assert models.perfect_mmu_overhead(10, 1000) == pytest.approx(0.12)
    with pytest.raises(ValueError, match="L3"):
        models.perfect_mmu_overhead(10, 1000, "L3")
    assert models.perfect_tlb_overhead(10, 1000) == pytest.approx(0.07)
    r = models.rmm_performance_model(t_2m=1100, c_2m=100, c_4k=400, m_4k=8, m_sim=2)
    assert r == {"ideal": 1000, "avg_walk_cycles": 50, "overhead_4k": 0.4, "overhead_sim": 0.1}
    assert models.lite_tlb_cycles(100, 10) == 100 * 7 + 10 * 50
