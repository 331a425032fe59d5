// SPDX-License-Identifier: Apache-2.0
package dev.handoff.jfr;

import java.util.Locale;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import jdk.jfr.SettingControl;

/**
 * The {@code waitThreshold} setting of the {@code dev.handoff.SemaphoreWait} event: a wait shorter
 * than it is not recorded. JFR's own {@code threshold} setting cannot do this job: it measures the
 * time between an event's {@code begin()} and {@code end()}, and a {@link JfrWaitListener} learns
 * of a wait only when it ends.
 *
 * <p>Values are written as JFR writes its durations: a whole number and a unit among {@code ns},
 * {@code us}, {@code ms}, {@code s}, {@code m}, {@code h}, {@code d}, as in {@code "20 ms"} (the
 * default, {@value #DEFAULT}) or {@code "0 ms"} (every wait). Set it in a {@code .jfc} file:
 *
 * <pre>{@code
 * <event name="dev.handoff.SemaphoreWait">
 *   <setting name="enabled">true</setting>
 *   <setting name="waitThreshold">5 ms</setting>
 * </event>
 * }</pre>
 *
 * <p>or in code: {@code recording.enable("dev.handoff.SemaphoreWait").with("waitThreshold", "5 ms")}.
 * When several recordings run at once, the smallest of their thresholds applies (as for JFR's own
 * {@code threshold}); a value that cannot be read is ignored.
 *
 * <p>JFR makes instances of this class itself; applications do not use it directly.
 */
public final class WaitThreshold extends SettingControl {

    /** The threshold when no recording sets one: {@value}. */
    public static final String DEFAULT = "20 ms";

    private static final long DEFAULT_NANOS = TimeUnit.MILLISECONDS.toNanos(20);

    /** Written by JFR's threads through {@link #setValue}, read by every committing thread. */
    private volatile long thresholdNanos = DEFAULT_NANOS;

    private volatile String value = DEFAULT;

    /**
     * What {@link #combine} returned last. On JDK 17 JFR drops that result for a setting defined
     * by an application (it calls {@code setValue(null)} after combining the values of several
     * recordings): {@link #setValue} then uses this instead. JFR calls both under its own lock.
     */
    private volatile String combined;

    /** Makes the setting at its default, {@value #DEFAULT}: called by JFR. */
    public WaitThreshold() {}

    /**
     * Returns the smallest of {@code values} that can be read, or {@value #DEFAULT} if none can.
     *
     * @param values the values asked by the running recordings
     * @return the value that applies
     */
    @Override
    public String combine(Set<String> values) {
        String best = null;
        long bestNanos = Long.MAX_VALUE;
        for (String v : values) {
            long nanos = parseNanos(v);
            if (nanos >= 0 && nanos < bestNanos) {
                bestNanos = nanos;
                best = v;
            }
        }
        String result = best == null ? DEFAULT : best;
        combined = result;
        return result;
    }

    /**
     * Sets the threshold; a value that cannot be read leaves it as it was.
     *
     * @param value a duration such as {@code "20 ms"}
     */
    @Override
    public void setValue(String value) {
        if (value == null) { // JDK 17 lost what combine returned: use it anyway
            value = combined;
        }
        long nanos = parseNanos(value);
        if (nanos >= 0) {
            this.thresholdNanos = nanos;
            this.value = value;
        }
    }

    /**
     * Returns the threshold in effect.
     *
     * @return the threshold, as set
     */
    @Override
    public String getValue() {
        return value;
    }

    /** Whether a wait of {@code waitNanos} is recorded. */
    boolean accepts(long waitNanos) {
        return waitNanos >= thresholdNanos;
    }

    /**
     * Reads a duration such as {@code "20 ms"}, {@code "0 ns"} or {@code "1s"}, in nanoseconds
     * (saturated at {@code Long.MAX_VALUE}); -1 if it cannot be read. {@code "0"} alone is 0.
     */
    static long parseNanos(String text) {
        if (text == null) {
            return -1;
        }
        String s = text.trim().toLowerCase(Locale.ROOT);
        int end = 0;
        while (end < s.length() && Character.isDigit(s.charAt(end))) {
            end++;
        }
        if (end == 0 || end > 18) {
            return -1;
        }
        long amount = Long.parseLong(s.substring(0, end));
        String unit = s.substring(end).trim();
        TimeUnit u;
        switch (unit) {
            case "":
                return amount == 0 ? 0 : -1;
            case "ns":
                u = TimeUnit.NANOSECONDS;
                break;
            case "us":
                u = TimeUnit.MICROSECONDS;
                break;
            case "ms":
                u = TimeUnit.MILLISECONDS;
                break;
            case "s":
                u = TimeUnit.SECONDS;
                break;
            case "m":
                u = TimeUnit.MINUTES;
                break;
            case "h":
                u = TimeUnit.HOURS;
                break;
            case "d":
                u = TimeUnit.DAYS;
                break;
            default:
                return -1;
        }
        return u.toNanos(amount);
    }
}
