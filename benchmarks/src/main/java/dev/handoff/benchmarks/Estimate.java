// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import java.util.Locale;

/**
 * A measured value and its error bar: the half-width of JMH's 99.9% confidence interval, or half
 * the range of the repeats for the footprint. An error of 0 means "unknown" (a single sample).
 *
 * @param value the score
 * @param error the half-width of the error bar, never negative, never NaN
 */
public record Estimate(double value, double error) {
    /**
     * @throws IllegalArgumentException if {@code error} is negative
     */
    public Estimate {
        if (Double.isNaN(error) || Double.isInfinite(error)) {
            error = 0;
        }
        if (error < 0) {
            throw new IllegalArgumentException("Estimate(" + value + ", " + error + "): negative error");
        }
    }

    /**
     * {@code this / other}, with the error bar of a quotient of independent measurements
     * (relative errors added in quadrature).
     *
     * @param other the divisor
     * @return the ratio; NaN if {@code other} is zero
     */
    public Estimate divide(Estimate other) {
        double ratio = value / other.value;
        if (!Double.isFinite(ratio)) {
            return new Estimate(Double.NaN, 0);
        }
        double relative = Math.hypot(relative(this), relative(other));
        return new Estimate(ratio, Math.abs(ratio) * relative);
    }

    /** @return {@code 1 / this}, with the same relative error */
    public Estimate inverse() {
        return new Estimate(1, 0).divide(this);
    }

    private static double relative(Estimate e) {
        return e.value == 0 ? 0 : e.error / Math.abs(e.value);
    }

    /** @return e.g. {@code "12.3 ± 0.4"}, with about three significant digits */
    @Override
    public String toString() {
        if (Double.isNaN(value)) {
            return "n/a";
        }
        return error == 0 ? format(value) : format(value) + " ± " + format(error);
    }

    /**
     * @param x a number
     * @return {@code x} with about three significant digits, e.g. {@code 0.0123}, {@code 1.23}, {@code 1234}
     */
    static String format(double x) {
        double a = Math.abs(x);
        if (a == 0) {
            return "0";
        }
        if (a >= 100) {
            return String.format(Locale.ROOT, "%.0f", x);
        }
        if (a >= 10) {
            return String.format(Locale.ROOT, "%.1f", x);
        }
        if (a >= 1) {
            return String.format(Locale.ROOT, "%.2f", x);
        }
        if (a >= 0.01) {
            return String.format(Locale.ROOT, "%.3f", x);
        }
        return String.format(Locale.ROOT, "%.1e", x);
    }
}
