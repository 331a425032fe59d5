// SPDX-License-Identifier: Apache-2.0
package dev.handoff.adaptive;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * The built-in algorithm: a latency gradient against a baseline that can fall and rise, in
 * windows, fed without a lock.
 *
 * <h2>Implementation notes</h2>
 *
 * <p><b>Overview.</b> Samples are summed per window (at least {@code windowNanos} long, and at
 * least {@link #MIN_SAMPLES} successes unless it has drops; a window with fewer successes and no
 * drops is stretched, up to {@link #MAX_STRETCH} times; a probe window never is, and a window with
 * drops closes on time even without a success: a window of only drops is the strongest sign of
 * overload). The
 * first sample that ends after the window's end closes it (that thread wins the {@code closing}
 * flag) and then counts in the next window, except a drop that finds the window without a success
 * or a drop: it counts in that window, so that a burst of timeouts (a stall: every call ends at
 * once, one timeout after it started) cuts when it arrives, not one timeout later. A use of zero
 * permits counts in none. The closer computes the next capacity:
 *
 * <pre>
 *   mean      = mean hold time of the window's successes
 *   baseline  = min(mean of each of the last HORIZON windows)      falls at once, rises as old windows age out
 *   gradient  = tolerance * baseline / mean                         1 or more: latency within tolerance
 *   used      = min(limit, peak in flight in the window)
 *
 *   drops of work admitted after the last decrease  -> limit = used * DROP_BACKOFF           (overload)
 *   gradient < 1                                    -> limit += smoothing * (used * max(1/2, gradient) - limit)
 *   gradient >= 1 and the limit was used            -> limit += max(1, sqrt(limit))          (grow)
 *   otherwise                                       -> unchanged
 *   every PROBE_EVERY windows (PROBE_SOON at the start and after a probe that lowered the baseline),
 *     whether or not the limit was used: one window at used * PROBE_DEPTH / tolerance, then back
 *   a probe whose mean did not fall below STREAK_MEAN of the window before, which was above tolerance
 *     -> baseline = probe mean (a slower downstream, not queueing)
 *   STREAK decreases that cut used to STREAK_CUT of it, latency still >= STREAK_MEAN of it -> baseline = mean (a slower downstream)
 * </pre>
 *
 * <p><b>Why each rule, against the known failure modes of latency-based limits.</b>
 * <ul>
 *   <li><i>Dropped requests looked like fast ones</i> (a timeout that ends early, or a drop counted
 *       with a zero round trip, pulls an average down, so the limit grows under overload). Here a
 *       drop's hold time is never a latency sample; a drop is overload and cuts the limit by
 *       {@link #DROP_BACKOFF}. Only drops of work admitted after the last decrease count: the
 *       timeouts of work admitted under the old limit still arrive for a while, and counting them
 *       would cut again and again for one overload (AIMD's over-reaction). A failure (the body
 *       threw) is not a latency sample either, nor overload. A rejection (no permits given) is
 *       not overload of the downstream but demand above the limit: it only says "the limit was
 *       used", which allows growth.</li>
 *   <li><i>A baseline that creeps up</i> (Vegas and Gradient2 keep the long-term latency as a
 *       moving average or a minimum of samples taken while the limit is already above the knee;
 *       queueing then becomes the baseline, and the limit follows it up). Here the baseline is
 *       the minimum of the window means over a horizon of {@link #HORIZON} windows: it falls at
 *       once when a window is faster, and it can rise (a downstream that became slower for
 *       good) when the faster windows age out. So that queueing never becomes the baseline, one
 *       window in every {@link #PROBE_EVERY} (in use or not) runs at
 *       {@code used * PROBE_DEPTH / tolerance}: below the knee even when the limit sits at the top
 *       of its tolerance band, so the downstream's queue drains and that window measures the
 *       uncongested latency: only the successes of work admitted after the probe started count
 *       in it (work admitted before, at the higher concurrency, would measure the queue it
 *       built). The horizon always holds such a window. With a baseline inflated by a
 *       factor b, the limit settles where latency is {@code tolerance * b}, the probe runs at
 *       {@code PROBE_DEPTH * b} of the knee, and its mean is {@code max(1, PROBE_DEPTH * b)}: below
 *       b, so the inflation shrinks with every probe instead of feeding on itself.</li>
 *   <li><i>A limit above the offered concurrency is never corrected</i> (a limit built generously,
 *       say 64, with 32 callers whose latency already grew 13-fold with the 32 in flight: every
 *       window looks the same, the baseline is the congested latency, and a rule that changes only
 *       a limit in use never moves it). Here the probe runs whether or not the limit is in use, at
 *       about half of what is in flight, and soon: {@link #PROBE_SOON} windows after the start,
 *       because the first windows' baseline is unconfirmed, and again {@code PROBE_SOON} windows
 *       after any probe that lowered the baseline (below {@link #PROBE_LOWERED} of it: latency
 *       grows with concurrency, so the present limit is congested). Each such probe lowers the
 *       baseline, the next window's gradient cuts from what is in use, and the limit walks down to
 *       the knee in a few seconds; once a probe finds the baseline unchanged, probes go back to one
 *       in {@code PROBE_EVERY}.</li>
 *   <li><i>A slower downstream read as congestion</i>. The other way round,
 *       a downstream that became slower for good (at any concurrency) reads at first as
 *       congestion; but when {@link #STREAK} decreases in a row have cut what is in use to
 *       {@link #STREAK_CUT} of it and the latency has not fallen below {@link #STREAK_MEAN} of what
 *       it was, it is not queueing (queueing drains when the concurrency falls): the baseline is
 *       reset to the present mean and the capacity grows again, after a few windows rather than
 *       a horizon. Should that misread real congestion, the next probe puts a lower mean back into
 *       the horizon. A probe is the direct test: when the window before it was above tolerance and,
 *       at about half the concurrency, the probe's mean did not fall below {@code STREAK_MEAN} of
 *       it, the baseline is reset to the probe's mean at once.</li>
 *   <li><i>Pinning traffic to the floor to measure the baseline</i> (Envoy's gradient controller
 *       drops to its minimum concurrency for a while, and sheds requests doing so). The probe is
 *       one window (by default 100 ms) in {@code PROBE_EVERY} (3.2 s) at about half of what is in
 *       use, not the floor; a probe window closes on time even without successes, so it never holds
 *       the capacity down longer than one window. And the capacity shrinks with debt: nothing in flight is revoked.</li>
 *   <li><i>Growth without a ceiling</i> (Gradient2 adds a queue allowance on every update, so under
 *       modest overload or steady timeouts the limit climbs to its maximum). Here the limit grows
 *       only in a window whose latency is within tolerance of the baseline, without drops, and in
 *       which the limit was used (the peak in flight reached 90% of it, a request waited or was
 *       rejected). Past the knee, latency rises with every permit added, so growth stops where
 *       latency reaches {@code tolerance * baseline}: more permits there would add queueing, not
 *       throughput. While traffic is light the limit does not run away to the maximum either.</li>
 * </ul>
 *
 * <p><b>Decreases</b> start from {@code used}, not from the limit, so a limit far above what is
 * in flight comes down in one step; the gradient is clamped at 1/2, so no window more than halves
 * it (and {@code smoothing}, 1 by default, takes only part of the step when the latency is noisy).
 * Unsmoothed by default because the window mean is already an average of many calls, and a slow
 * decrease lets the queue the overload built keep growing: in the simulation, smoothing 0.5 doubled
 * the p99 of the second after a halving of the downstream. Growth is additive ({@code sqrt(limit)}
 * per window): from 20 to 40 in about five windows.
 *
 * <p><b>Concurrency.</b> The window's sums ({@code successes}, {@code successNanos}, {@code drops},
 * {@code rejections}, {@code failures}, {@code peak}) are written by every sampling thread with
 * one atomic add (or a compare-and-set loop for the peak): no lock, no allocation. The closer
 * takes each sum with {@code getAndSet(0)}; a sample that races with it lands in one window or the
 * next, never in both and never lost. {@code closing} (compare-and-set 0 to 1, written back to 0
 * with a volatile write) makes the closer the only thread to read and write the remaining state
 * ({@code limit}, the ring of means, the probe), and orders one closer's writes before the next
 * closer's reads. {@code windowStart} and {@code lastDecrease} are written by the closer only and
 * read by samplers (volatile).
 */
final class BaselineGradient implements Controller {

    /** Windows of means kept for the baseline. */
    static final int HORIZON = 64;
    /** A probe window every this many windows (half the horizon: the horizon always holds one). */
    static final int PROBE_EVERY = 32;
    /** The first probe, and the next after a probe that lowered the baseline, come this many windows later. */
    static final int PROBE_SOON = 4;
    /** A probe whose mean is below this fraction of the baseline lowered it: latency grows with concurrency. */
    static final double PROBE_LOWERED = 0.9;
    /** The probe runs at {@code used * PROBE_DEPTH / tolerance}. */
    static final double PROBE_DEPTH = 0.8;
    /** The cut on drops. */
    static final double DROP_BACKOFF = 0.8;
    /** Successes a window needs before it closes (unless it has drops). */
    static final long MIN_SAMPLES = 10;
    /** A window with too few successes is stretched up to this many window lengths. */
    static final long MAX_STRETCH = 10;
    /** Decreases in a row after which latency that did not fall is read as a slower downstream. */
    static final int STREAK = 3;
    /** ... if those decreases cut what is in use to this fraction or less ... */
    static final double STREAK_CUT = 0.6;
    /** ... and the mean is still at least this fraction of what it was. */
    static final double STREAK_MEAN = 0.9;
    /** The limit counts as used when the peak in flight reached this fraction of it. */
    static final double USED = 0.9;

    private final Sampler<?> capacity;
    private final long windowNanos;
    private final double tolerance;
    private final double smoothing;

    // Sums of the current window: written by every sampling thread (atomic add), reset by the closer.
    private volatile long successes;
    private volatile long successNanos;
    private volatile long drops;
    private volatile long rejections;
    private volatile long failures;
    private volatile long peak;

    /** 1 while a thread closes a window. */
    private volatile int closing;
    /** Written by the closer (and the constructor); read by samplers. */
    private volatile long windowStart;
    /** Drops of work that started before this reading of the clock do not count. Written by the closer. */
    private volatile long lastDecrease;
    /**
     * Successes of work that started before this reading of the clock are no latency samples: set
     * when a probe starts, so that the probe measures only work admitted at its lower concurrency.
     * Written by the closer.
     */
    private volatile long latencyFrom;
    /** The last window's mean and the baseline, for readers (metrics). Written by the closer. */
    private volatile double publishedMean = Double.NaN;

    private volatile double publishedBaseline = Double.NaN;

    // Owned by the thread that holds `closing`.
    private double limit;
    private final double[] means = new double[HORIZON];
    private int meanCount;
    private int nextMean;
    private int windowsSinceProbe;
    /** Windows from one probe to the next: PROBE_SOON until a probe confirms the baseline, then PROBE_EVERY. */
    private int probeInterval = PROBE_SOON;

    private int decreaseStreak;
    private double streakMean;
    private double streakUsed;
    private boolean probing;
    /** The mean of the last window that was not a probe. */
    private double lastMean;

    private double beforeProbe;
    private long windows;
    private long probes;
    private long resets;

    BaselineGradient(Sampler<?> capacity, long start, long windowNanos, double tolerance, double smoothing, long now) {
        this.capacity = capacity;
        this.windowNanos = windowNanos;
        this.tolerance = tolerance;
        this.smoothing = smoothing;
        this.limit = start;
        this.windowStart = now;
        this.lastDecrease = now;
        this.latencyFrom = now;
    }

    @Override
    public void acquired(long inFlight) {
        long p;
        while (inFlight > (p = peak)) {
            if (PEAK.weakCompareAndSet(this, p, inFlight)) {
                return;
            }
        }
    }

    @Override
    public void sample(long startNanos, long endNanos, long permits, long inFlight, Outcome outcome) {
        // A sample that ends after the window's end belongs to the next window: close first. A drop
        // that finds the window without a success or a drop is that window's signal instead.
        boolean countedDrop = outcome == Outcome.DROPPED && permits != 0 && startNanos - lastDecrease >= 0;
        if (endNanos - windowStart >= windowNanos && closing == 0 && CLOSING.compareAndSet(this, 0, 1)) {
            try {
                if (close(endNanos, countedDrop)) {
                    return; // counted in the window it closed
                }
            } finally {
                closing = 0;
            }
        }
        if (permits == 0) {
            return; // a use of no permits occupies nothing: its time says nothing about the downstream
        }
        switch (outcome) {
            case SUCCESS:
                if (startNanos - latencyFrom >= 0) {
                    SUCCESSES.getAndAdd(this, 1L);
                    SUCCESS_NANOS.getAndAdd(this, endNanos - startNanos);
                }
                break;
            case DROPPED:
                if (startNanos - lastDecrease >= 0) {
                    DROPS.getAndAdd(this, 1L);
                }
                break;
            case REJECTED:
                REJECTIONS.getAndAdd(this, 1L);
                break;
            default:
                FAILURES.getAndAdd(this, 1L);
                break;
        }
    }

    /**
     * Runs in the thread that holds {@code closing}. {@code drop}: the closing sample is a drop that
     * counts. Returns whether that drop was counted in the window closed here: a window without a
     * success or a drop takes it, so that a burst of timeouts (every call of a stall ending at once)
     * cuts when it arrives rather than one timeout later, when the next sample closes the next window.
     */
    private boolean close(long now, boolean drop) {
        if (now - windowStart < windowNanos) {
            return false; // another thread closed this window just before
        }
        if (!probing
                && !drop
                && successes < MIN_SAMPLES
                && drops == 0
                && now - windowStart < windowNanos * MAX_STRETCH) {
            return false; // too few samples: stretch the window (never a probe's, which holds the capacity down)
        }
        long ok = (long) SUCCESSES.getAndSet(this, 0L);
        long nanos = (long) SUCCESS_NANOS.getAndSet(this, 0L);
        long dropped = (long) DROPS.getAndSet(this, 0L);
        boolean takesDrop = drop && !probing && ok == 0 && dropped == 0;
        if (takesDrop) {
            dropped = 1;
        }
        long rejected = (long) REJECTIONS.getAndSet(this, 0L);
        FAILURES.getAndSet(this, 0L);
        long peakInFlight = (long) PEAK.getAndSet(this, capacity.inFlight());
        windowStart = now;
        windows++;

        long current = capacity.capacity();
        if (probing) {
            // This window ran below the knee: its mean is the uncongested latency.
            probing = false;
            probeInterval = PROBE_EVERY;
            if (ok > 0 && dropped == 0) {
                double before = baseline();
                double probeMean = (double) nanos / ok;
                addMean(probeMean);
                if (probeMean < PROBE_LOWERED * before) {
                    probeInterval = PROBE_SOON; // latency grows with concurrency: look again soon
                } else if (lastMean > tolerance * before && probeMean >= STREAK_MEAN * lastMean) {
                    resetBaseline(probeMean); // at about half the concurrency it did not fall: not queueing
                }
            }
            set(beforeProbe, CapacityListener.Reason.PROBE);
            return takesDrop;
        }
        double used = Math.min(limit, Math.max(1, peakInFlight));
        boolean inUse = peakInFlight >= USED * current || rejected > 0 || capacity.demandWaits();
        if (dropped > 0) {
            lastDecrease = now;
            set(used * DROP_BACKOFF, CapacityListener.Reason.DROP_CUT);
            return takesDrop;
        }
        if (ok == 0) {
            return false; // only failures or rejections: nothing to measure
        }
        double mean = (double) nanos / ok;
        lastMean = mean;
        addMean(mean);
        double gradient = tolerance * baseline() / mean;
        if (gradient < 1 && notCongestion(mean, used)) {
            resetBaseline(mean);
            gradient = tolerance;
        }
        if (gradient < 1) {
            lastDecrease = now;
            set(limit + smoothing * (used * Math.max(0.5, gradient) - limit), CapacityListener.Reason.LATENCY_CUT);
        } else if (inUse) {
            set(limit + Math.max(1, Math.sqrt(limit)), CapacityListener.Reason.GROWTH);
        }
        if (gradient >= 1) {
            decreaseStreak = 0;
        }
        if (++windowsSinceProbe >= probeInterval) {
            windowsSinceProbe = 0;
            probing = true;
            probes++;
            beforeProbe = limit;
            latencyFrom = now; // work admitted above the probe's concurrency would measure the queue it built
            capacity.apply(Math.max(1, Math.min(limit, used) * PROBE_DEPTH / tolerance), CapacityListener.Reason.PROBE);
        }
        return false;
    }

    /**
     * Whether latency above tolerance is a slower downstream rather than congestion: after
     * {@link #STREAK} decreases in a row that cut what is in use to {@link #STREAK_CUT} of it or
     * less, the mean has not fallen below {@link #STREAK_MEAN} of what it was. Queueing would have
     * drained by then. Updates the streak; closer only.
     */
    private boolean notCongestion(double mean, double used) {
        if (decreaseStreak == 0) {
            streakMean = mean;
            streakUsed = used;
        }
        decreaseStreak++;
        return decreaseStreak > STREAK && used <= STREAK_CUT * streakUsed && mean >= STREAK_MEAN * streakMean;
    }

    private void resetBaseline(double mean) {
        meanCount = 0;
        nextMean = 0;
        addMean(mean);
        decreaseStreak = 0;
        resets++;
    }

    private void set(double next, CapacityListener.Reason reason) {
        limit = capacity.apply(next, reason);
    }

    private void addMean(double mean) {
        means[nextMean] = mean;
        nextMean = (nextMean + 1) % HORIZON;
        meanCount = Math.min(HORIZON, meanCount + 1);
        publishedMean = mean;
        publishedBaseline = baseline();
    }

    /** The minimum of the window means kept; closer only. */
    private double baseline() {
        double min = Double.MAX_VALUE;
        for (int i = 0; i < meanCount; i++) {
            min = Math.min(min, means[i]);
        }
        return min;
    }

    /** For tests and toString: closes counted, probes run, and the baseline in nanoseconds (NaN before any). Racy snapshot. */
    String describe() {
        return "windows=" + windows + ", probes=" + probes + ", resets=" + resets + ", baselineNanos="
                + (meanCount == 0 ? Double.NaN : baseline());
    }

    /** The current window's sums, for tests: successes, drops, rejections, failures. */
    long[] sums() {
        return new long[] {successes, drops, rejections, failures};
    }

    long windows() {
        return windows;
    }

    long probes() {
        return probes;
    }

    long resets() {
        return resets;
    }

    @Override
    public double baselineNanos() {
        return publishedBaseline;
    }

    @Override
    public double windowLatencyNanos() {
        return publishedMean;
    }

    @Override
    public String toString() {
        return "BaselineGradient[tolerance=" + tolerance + ", smoothing=" + smoothing + ", windowNanos=" + windowNanos
                + ", " + describe() + "]";
    }

    // VarHandle mechanics
    private static final VarHandle SUCCESSES;
    private static final VarHandle SUCCESS_NANOS;
    private static final VarHandle DROPS;
    private static final VarHandle REJECTIONS;
    private static final VarHandle FAILURES;
    private static final VarHandle PEAK;
    private static final VarHandle CLOSING;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            SUCCESSES = l.findVarHandle(BaselineGradient.class, "successes", long.class);
            SUCCESS_NANOS = l.findVarHandle(BaselineGradient.class, "successNanos", long.class);
            DROPS = l.findVarHandle(BaselineGradient.class, "drops", long.class);
            REJECTIONS = l.findVarHandle(BaselineGradient.class, "rejections", long.class);
            FAILURES = l.findVarHandle(BaselineGradient.class, "failures", long.class);
            PEAK = l.findVarHandle(BaselineGradient.class, "peak", long.class);
            CLOSING = l.findVarHandle(BaselineGradient.class, "closing", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }
}
