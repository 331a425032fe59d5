// SPDX-License-Identifier: Apache-2.0
package dev.handoff.micrometer;

import dev.handoff.Semaphore;
import dev.handoff.WaitListener;
import dev.handoff.WaitOutcome;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * Micrometer metrics for one {@link Semaphore}: the semaphore's {@link WaitListener} (it times
 * every wait) and a {@link MeterBinder} (it registers the meters). The listener must exist before
 * the semaphore, the gauges need the semaphore, so the wiring takes three steps:
 *
 * <pre>{@code
 * SemaphoreMetrics metrics = SemaphoreMetrics.builder("uploads").baseUnit("bytes").build();
 * Semaphore uploads = Semaphore.builder(64L << 20)
 *         .waitListener(metrics)              // 1. times the waits
 *         .build();
 * metrics.monitor(uploads)                    // 2. the semaphore the gauges read
 *         .bindTo(registry);                  // 3. the meters, in any number of registries
 * }</pre>
 *
 * <p>or, when this is the semaphore's only listener, in one:
 * {@code Semaphore uploads = metrics.buildMonitored(Semaphore.builder(64L << 20));}
 * then {@code metrics.bindTo(registry)}.
 *
 * <p><b>Meters</b> (with the default prefix {@value #DEFAULT_PREFIX}; every meter has the tag
 * {@code name} = the name given to {@link #builder(String)}, and the builder's tags):
 * <table>
 * <caption>The meters</caption>
 * <tr><th>name</th><th>type</th><th>unit</th><th>what</th></tr>
 * <tr><td>{@code handoff.semaphore.capacity}</td><td>gauge</td><td>base unit</td><td>{@link Semaphore#capacity()}</td></tr>
 * <tr><td>{@code handoff.semaphore.available}</td><td>gauge</td><td>base unit</td><td>{@link Semaphore#availablePermits()}</td></tr>
 * <tr><td>{@code handoff.semaphore.queue.length}</td><td>gauge</td><td></td><td>{@link Semaphore#queueLength()}: the waiting acquisitions</td></tr>
 * <tr><td>{@code handoff.semaphore.queue.permits}</td><td>gauge</td><td>base unit</td><td>{@link Semaphore#queuedPermits()}: the permits they wait for</td></tr>
 * <tr><td>{@code handoff.semaphore.wait}</td><td>timer, tag {@code outcome}</td><td>time</td><td>one record per wait, when it ends</td></tr>
 * <tr><td>{@code handoff.semaphore.wait.permits}</td><td>distribution summary, tag {@code outcome}</td><td>base unit</td><td>the weight of each wait</td></tr>
 * <tr><td>{@code handoff.semaphore.rejected}</td><td>counter</td><td></td><td>acquisitions refused by the queue bounds (load shedding)</td></tr>
 * </table>
 * The {@code outcome} tag is one of {@code granted}, {@code cancelled}, {@code timed_out},
 * {@code closed}, {@code failed} (see {@link WaitOutcome}); the timers and summaries of all five
 * are registered at once, so they read zero until something happens. Only waits are timed: an
 * acquisition granted at once is not counted anywhere (the semaphore's fast path stays as fast as
 * without a listener). Percentiles and histograms are configured as usual, with a
 * {@code MeterFilter}.
 *
 * <p><b>Keep a strong reference to the semaphore.</b> Like every Micrometer gauge, these hold the
 * semaphore weakly: a semaphore that nothing else references is collected, and its gauges then
 * read {@code NaN}.
 *
 * <p><b>One semaphore each.</b> A {@code SemaphoreMetrics} observes exactly one semaphore: give it
 * to one builder only (a listener is not told which semaphore calls it, so two semaphores sharing
 * it would mix their waits), and {@link #monitor} refuses a second semaphore. Waits that end before
 * {@link #bindTo} are not recorded anywhere. Give each semaphore of one registry its own name (or
 * tags): Micrometer keeps the first gauge registered under a name and tags, so a second
 * semaphore registered with the same ones would not be shown.
 *
 * <p>Thread-safe. The listener methods allocate nothing and take no lock.
 */
public final class SemaphoreMetrics implements WaitListener, MeterBinder {

    /** The default prefix of every meter name: {@value}. */
    public static final String DEFAULT_PREFIX = "handoff.semaphore";

    /** The default base unit of the permit meters: {@value}. */
    public static final String DEFAULT_BASE_UNIT = "permits";

    /** The tag naming the semaphore: {@value}. */
    public static final String NAME_TAG = "name";

    /** The tag of the wait timers and summaries naming how the wait ended: {@value}. */
    public static final String OUTCOME_TAG = "outcome";

    private static final WaitOutcome[] OUTCOMES = WaitOutcome.values();

    private final String name;
    private final String prefix;
    private final String baseUnit;
    private final Tags tags;

    /** Set once by {@link #monitor}, under {@code this}; read under {@code this}. */
    private Semaphore semaphore;

    /**
     * The meters of every registry bound so far: replaced (copy on write) under {@code this},
     * read without a lock by the listener methods.
     */
    private volatile Meters[] bound = new Meters[0];

    private SemaphoreMetrics(Builder b) {
        this.name = b.name;
        this.prefix = b.prefix;
        this.baseUnit = b.baseUnit;
        this.tags = Tags.of(NAME_TAG, b.name).and(b.tags);
    }

    /**
     * Returns metrics for the semaphore called {@code name}, with the default prefix
     * ({@value #DEFAULT_PREFIX}), base unit ({@value #DEFAULT_BASE_UNIT}) and no other tag. Short
     * for {@code builder(name).build()}.
     *
     * @param name the value of the {@code name} tag, not blank
     * @return new metrics, monitoring no semaphore yet
     * @throws NullPointerException if {@code name} is null
     * @throws IllegalArgumentException if {@code name} is blank
     */
    public static SemaphoreMetrics of(String name) {
        return builder(name).build();
    }

    /**
     * Starts metrics for the semaphore called {@code name}: set the prefix, the base unit and the
     * tags, then {@link Builder#build()}.
     *
     * @param name the value of the {@code name} tag, not blank
     * @return a builder
     * @throws NullPointerException if {@code name} is null
     * @throws IllegalArgumentException if {@code name} is blank
     */
    public static Builder builder(String name) {
        return new Builder(notBlank("SemaphoreMetrics.builder", name, "the name"));
    }

    /**
     * Sets the semaphore that the gauges read. Call it once the semaphore is built with this as
     * its {@link Semaphore.Builder#waitListener(WaitListener) waitListener}; calling it again with
     * the same semaphore does nothing.
     *
     * @param semaphore the semaphore this listens to
     * @return this, to call {@link #bindTo} next
     * @throws NullPointerException if {@code semaphore} is null
     * @throws IllegalStateException if another semaphore is monitored already
     */
    public synchronized SemaphoreMetrics monitor(Semaphore semaphore) {
        if (semaphore == null) {
            throw new NullPointerException("monitor(null): the semaphore is null (SemaphoreMetrics \"" + name + "\")");
        }
        if (this.semaphore != null && this.semaphore != semaphore) {
            throw new IllegalStateException("monitor(" + semaphore + "): SemaphoreMetrics \"" + name
                    + "\" already monitors " + this.semaphore
                    + "; one SemaphoreMetrics observes one semaphore, make another for this one");
        }
        this.semaphore = semaphore;
        return this;
    }

    /**
     * Builds a semaphore with this as its only wait listener, and monitors it: short for
     * {@code monitor(builder.waitListener(this).build())}. To combine this with other listeners,
     * use {@link WaitListener#all} and {@link #monitor} instead.
     *
     * @param builder the semaphore's builder, with its other options set; its listener is replaced
     * @return the new semaphore, monitored by this
     * @throws NullPointerException if {@code builder} is null
     * @throws IllegalStateException if this monitors a semaphore already (nothing is built)
     */
    public synchronized Semaphore buildMonitored(Semaphore.Builder builder) {
        if (builder == null) {
            throw new NullPointerException("buildMonitored(null): the builder is null (SemaphoreMetrics \"" + name + "\")");
        }
        if (semaphore != null) {
            throw new IllegalStateException("buildMonitored(builder): SemaphoreMetrics \"" + name
                    + "\" already monitors " + semaphore
                    + "; one SemaphoreMetrics observes one semaphore, make another for a new one");
        }
        Semaphore built = builder.waitListener(this).build();
        this.semaphore = built;
        return built;
    }

    /**
     * Registers the meters in {@code registry}: the gauges of the monitored semaphore, and the
     * timers, summaries and counter that this listener records from now on. Binding to a registry
     * bound before does nothing; binding to several registries records into each.
     *
     * @param registry the registry
     * @throws NullPointerException if {@code registry} is null
     * @throws IllegalStateException if no semaphore is monitored yet: call {@link #monitor} (or
     *     {@link #buildMonitored}) first
     */
    @Override
    public synchronized void bindTo(MeterRegistry registry) {
        if (registry == null) {
            throw new NullPointerException("bindTo(null): the registry is null (SemaphoreMetrics \"" + name + "\")");
        }
        if (semaphore == null) {
            throw new IllegalStateException("bindTo(" + registry.getClass().getSimpleName() + "): SemaphoreMetrics \""
                    + name + "\" monitors no semaphore yet; call monitor(semaphore) first");
        }
        Meters[] current = bound;
        for (Meters m : current) {
            if (m.registry == registry) {
                return;
            }
        }
        Gauge.builder(prefix + ".capacity", semaphore, Semaphore::capacity)
                .description("The semaphore's capacity")
                .baseUnit(baseUnit).tags(tags).register(registry);
        Gauge.builder(prefix + ".available", semaphore, Semaphore::availablePermits)
                .description("The permits held by nobody and not handed to a waiter")
                .baseUnit(baseUnit).tags(tags).register(registry);
        Gauge.builder(prefix + ".queue.length", semaphore, Semaphore::queueLength)
                .description("The acquisitions waiting in the queue")
                .tags(tags).register(registry);
        Gauge.builder(prefix + ".queue.permits", semaphore, Semaphore::queuedPermits)
                .description("The permits the waiting acquisitions wait for")
                .baseUnit(baseUnit).tags(tags).register(registry);
        Timer[] waits = new Timer[OUTCOMES.length];
        DistributionSummary[] weights = new DistributionSummary[OUTCOMES.length];
        for (WaitOutcome o : OUTCOMES) {
            String outcome = outcomeTag(o);
            waits[o.ordinal()] = Timer.builder(prefix + ".wait")
                    .description("How long acquisitions waited in the queue, by how the wait ended")
                    .tags(tags).tag(OUTCOME_TAG, outcome).register(registry);
            weights[o.ordinal()] = DistributionSummary.builder(prefix + ".wait.permits")
                    .description("The permits each waiting acquisition waited for, by how the wait ended")
                    .baseUnit(baseUnit).tags(tags).tag(OUTCOME_TAG, outcome).register(registry);
        }
        Counter rejected = Counter.builder(prefix + ".rejected")
                .description("Acquisitions refused at once because the wait queue was full")
                .tags(tags).register(registry);
        Meters[] next = Arrays.copyOf(current, current.length + 1);
        next[current.length] = new Meters(registry, waits, weights, rejected);
        bound = next;
    }

    /**
     * Not recorded: the gauges read the queue itself. See {@link WaitListener#queued}.
     *
     * @param permits the weight that waits
     * @param waitersAhead the queue length at entry
     */
    @Override
    public void queued(long permits, int waitersAhead) {
    }

    /**
     * Records the wait in the {@code wait} timer and the {@code wait.permits} summary of its
     * outcome, in every bound registry. See {@link WaitListener#settled}.
     *
     * @param permits the weight
     * @param outcome how the wait ended
     * @param waitNanos how long it waited
     * @param waitersAhead the queue length at entry
     */
    @Override
    public void settled(long permits, WaitOutcome outcome, long waitNanos, int waitersAhead) {
        int i = outcome.ordinal();
        for (Meters m : bound) {
            m.waits[i].record(waitNanos, TimeUnit.NANOSECONDS);
            m.weights[i].record(permits);
        }
    }

    /**
     * Counts the refusal in the {@code rejected} counter of every bound registry. See
     * {@link WaitListener#rejected}.
     *
     * @param permits the weight refused
     */
    @Override
    public void rejected(long permits) {
        for (Meters m : bound) {
            m.rejected.increment();
        }
    }

    /**
     * Returns the value of the {@code name} tag.
     *
     * @return the semaphore's name
     */
    public String name() {
        return name;
    }

    /**
     * Returns the value of the {@code outcome} tag for {@code outcome}: its name in lower case
     * ({@code granted}, {@code cancelled}, {@code timed_out}, {@code closed}, {@code failed}).
     *
     * @param outcome an outcome
     * @return its tag value
     * @throws NullPointerException if {@code outcome} is null
     */
    public static String outcomeTag(WaitOutcome outcome) {
        return outcome.name().toLowerCase(Locale.ROOT);
    }

    @Override
    public String toString() {
        return "SemaphoreMetrics[" + prefix + " " + tags + ", base unit " + baseUnit + "]";
    }

    /** The meters of one registry. */
    private static final class Meters {
        final MeterRegistry registry;
        final Timer[] waits;
        final DistributionSummary[] weights;
        final Counter rejected;

        Meters(MeterRegistry registry, Timer[] waits, DistributionSummary[] weights, Counter rejected) {
            this.registry = registry;
            this.waits = waits;
            this.weights = weights;
            this.rejected = rejected;
        }
    }

    private static String notBlank(String call, String value, String what) {
        if (value == null) {
            throw new NullPointerException(call + "(null): " + what + " is null");
        }
        if (value.isBlank()) {
            throw new IllegalArgumentException(call + "(\"" + value + "\"): " + what + " must not be blank");
        }
        return value;
    }

    /**
     * The options of a {@link SemaphoreMetrics}: from {@link SemaphoreMetrics#builder(String)}.
     * Not thread-safe.
     */
    public static final class Builder {
        private final String name;
        private String prefix = DEFAULT_PREFIX;
        private String baseUnit = DEFAULT_BASE_UNIT;
        private final List<Tag> tags = new ArrayList<>();

        private Builder(String name) {
            this.name = name;
        }

        /**
         * Sets the prefix of every meter name, instead of {@value #DEFAULT_PREFIX}: with
         * {@code "uploads.limiter"}, the timer is {@code uploads.limiter.wait}.
         *
         * @param prefix the prefix, not blank, neither starting nor ending with a dot
         * @return this builder
         * @throws NullPointerException if {@code prefix} is null
         * @throws IllegalArgumentException if {@code prefix} is blank or starts or ends with a dot
         */
        public Builder prefix(String prefix) {
            notBlank("prefix", prefix, "the prefix");
            if (prefix.startsWith(".") || prefix.endsWith(".")) {
                throw new IllegalArgumentException("prefix(\"" + prefix
                        + "\"): must not start or end with a dot (the meter names add \".wait\", \".capacity\", ...)");
            }
            this.prefix = prefix;
            return this;
        }

        /**
         * Sets the base unit of the meters that count permits (capacity, available, queued
         * permits, waited permits), instead of {@value #DEFAULT_BASE_UNIT}: for a semaphore whose
         * permits are bytes, {@code "bytes"} (Micrometer's {@code BaseUnits.BYTES}).
         *
         * @param baseUnit the unit, not blank
         * @return this builder
         * @throws NullPointerException if {@code baseUnit} is null
         * @throws IllegalArgumentException if {@code baseUnit} is blank
         */
        public Builder baseUnit(String baseUnit) {
            this.baseUnit = notBlank("baseUnit", baseUnit, "the base unit");
            return this;
        }

        /**
         * Adds tags to every meter, as key-value pairs: {@code tags("region", "eu", "tier", "free")}.
         *
         * @param keyValues keys and values, alternately
         * @return this builder
         * @throws NullPointerException if {@code keyValues} or one of them is null
         * @throws IllegalArgumentException if there is an odd number of them, or a key is
         *     {@value #NAME_TAG} or {@value #OUTCOME_TAG} (this class's own tags)
         */
        public Builder tags(String... keyValues) {
            if (keyValues == null) {
                throw new NullPointerException("tags(null): the key-value pairs are null");
            }
            if (keyValues.length % 2 != 0) {
                throw new IllegalArgumentException("tags(" + Arrays.toString(keyValues) + "): " + keyValues.length
                        + " strings, but keys and values come in pairs");
            }
            List<Tag> added = new ArrayList<>();
            for (int i = 0; i < keyValues.length; i += 2) {
                if (keyValues[i] == null || keyValues[i + 1] == null) {
                    throw new NullPointerException("tags(" + Arrays.toString(keyValues) + "): the "
                            + (keyValues[i] == null ? "key " + i : "value " + (i + 1)) + " is null");
                }
                added.add(Tag.of(keyValues[i], keyValues[i + 1]));
            }
            return tags(added);
        }

        /**
         * Adds tags to every meter.
         *
         * @param tags the tags
         * @return this builder
         * @throws NullPointerException if {@code tags} or one of them is null
         * @throws IllegalArgumentException if a key is {@value #NAME_TAG} or {@value #OUTCOME_TAG}
         *     (this class's own tags)
         */
        public Builder tags(Iterable<Tag> tags) {
            if (tags == null) {
                throw new NullPointerException("tags(null): the tags are null");
            }
            List<Tag> added = new ArrayList<>();
            for (Tag t : tags) {
                if (t == null) {
                    throw new NullPointerException("tags(" + tags + "): a tag is null");
                }
                if (t.getKey().equals(NAME_TAG) || t.getKey().equals(OUTCOME_TAG)) {
                    throw new IllegalArgumentException("tags(" + tags + "): the key \"" + t.getKey()
                            + "\" is SemaphoreMetrics' own (" + NAME_TAG + " is the name given to builder(name), "
                            + OUTCOME_TAG + " tags the waits); choose another key");
                }
                added.add(t);
            }
            this.tags.addAll(added);
            return this;
        }

        /**
         * Builds the metrics: give them to {@link Semaphore.Builder#waitListener(WaitListener)},
         * then {@link SemaphoreMetrics#monitor} the semaphore and {@link SemaphoreMetrics#bindTo}
         * a registry.
         *
         * @return new metrics, monitoring no semaphore yet
         */
        public SemaphoreMetrics build() {
            return new SemaphoreMetrics(this);
        }
    }
}
