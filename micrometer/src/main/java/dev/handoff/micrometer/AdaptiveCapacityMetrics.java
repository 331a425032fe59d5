// SPDX-License-Identifier: Apache-2.0
package dev.handoff.micrometer;

import dev.handoff.adaptive.AdaptiveCapacity;
import dev.handoff.adaptive.AdaptiveFairShare;
import dev.handoff.adaptive.CapacityListener;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.TimeGauge;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.function.ToDoubleFunction;
import org.jspecify.annotations.Nullable;

/**
 * Micrometer metrics for one {@link AdaptiveCapacity} or {@link AdaptiveFairShare}: a
 * {@link CapacityListener} (it counts the changes of the capacity by reason) and a
 * {@link MeterBinder} (its gauges read the adaptive object). The adaptive builders take any number
 * of listeners, so these metrics are added beside the user's own listener, never instead of it. In
 * one call, which adds the metrics as a listener, builds, and registers the meters:
 *
 * <pre>{@code
 * AdaptiveCapacity adaptive = AdaptiveCapacityMetrics.monitor(registry, "downstream",
 *         AdaptiveCapacity.builder(inFlight)
 *                 .maxCapacity(500)
 *                 .listener((from, to, reason) -> log.info("{} -> {} ({})", from, to, reason)));
 * }</pre>
 *
 * <p>or, with a prefix or tags, in three steps (the listener must exist before the adaptive
 * object, the gauges need the object):
 *
 * <pre>{@code
 * AdaptiveCapacityMetrics metrics = AdaptiveCapacityMetrics.builder("downstream").tags("service", "ingest").build();
 * AdaptiveCapacity adaptive = AdaptiveCapacity.builder(inFlight)
 *         .listener(metrics)                 // 1. counts the changes
 *         .build();
 * metrics.monitor(adaptive)                  // 2. the object the gauges read
 *         .bindTo(registry);                 // 3. the meters, in any number of registries
 * }</pre>
 *
 * <p>({@link #buildMonitored(AdaptiveCapacity.Builder)} does steps 1 and 2 in one call.)
 *
 * <p><b>Meters</b> (default prefix {@value #DEFAULT_PREFIX}; every meter has the tag
 * {@value #NAME_TAG} and the builder's tags):
 * <table>
 * <caption>The meters of an adaptive capacity</caption>
 * <tr><th>name</th><th>type</th><th>unit</th><th>what</th></tr>
 * <tr><td>{@code handoff.adaptive.capacity}</td><td>gauge</td><td>base unit</td><td>{@code capacity()}: the present target</td></tr>
 * <tr><td>{@code handoff.adaptive.capacity.min}</td><td>gauge</td><td>base unit</td><td>{@code minCapacity()}</td></tr>
 * <tr><td>{@code handoff.adaptive.capacity.max}</td><td>gauge</td><td>base unit</td><td>{@code maxCapacity()}</td></tr>
 * <tr><td>{@code handoff.adaptive.in.flight}</td><td>gauge</td><td>base unit</td><td>{@code inFlight()}: the permits held by sampled uses</td></tr>
 * <tr><td>{@code handoff.adaptive.latency.baseline}</td><td>time gauge</td><td>time</td><td>{@code baselineNanos()}: the uncongested latency the built-in algorithm compares with ({@code NaN} before its first window, and with a Netflix {@code Limit})</td></tr>
 * <tr><td>{@code handoff.adaptive.latency.window}</td><td>time gauge</td><td>time</td><td>{@code windowLatencyNanos()}: the mean hold time of the successes of the last window ({@code NaN} likewise)</td></tr>
 * <tr><td>{@code handoff.adaptive.drops}</td><td>function counter</td><td></td><td>{@code drops()}: sampled uses that ended as drops (timeouts)</td></tr>
 * <tr><td>{@code handoff.adaptive.capacity.changes}</td><td>function counter, tag {@value #REASON_TAG}</td><td></td><td>changes of the capacity heard as the listener, by {@link CapacityListener.Reason}: {@code growth}, {@code latency_cut}, {@code drop_cut}, {@code probe}, {@code bounds}, {@code limit}</td></tr>
 * </table>
 *
 * <p>The change counters of every reason are registered at once, so they read zero until a change
 * of that reason. They count every change heard since the metrics became a listener, also before
 * {@link #bindTo} (a starting capacity clamped by {@code build()} is a {@code bounds} change).
 *
 * <p><b>The name.</b> The value of the {@value #NAME_TAG} tag is the name given to
 * {@link #builder(String)} if there is one, else the name of the adaptive object's semaphore (or
 * fair share); {@link #monitor} refuses an object when neither has a name.
 *
 * <p><b>Keep a strong reference to the adaptive object.</b> Like every Micrometer gauge, these
 * hold it weakly: an object that nothing else references is collected, and its gauges then read
 * {@code NaN}.
 *
 * <p><b>One adaptive object each.</b> A listener is not told which object calls it: give these
 * metrics to one builder only, and monitor that object ({@code buildMonitored} does both, so they
 * cannot differ). {@link #monitor} refuses a second object.
 *
 * <p>Thread-safe. The listener method takes no lock and allocates nothing.
 */
public final class AdaptiveCapacityMetrics implements CapacityListener, MeterBinder {

    /** The default prefix of every meter name: {@value}. */
    public static final String DEFAULT_PREFIX = "handoff.adaptive";

    /** The default base unit of the meters that count permits: {@value}. */
    public static final String DEFAULT_BASE_UNIT = "permits";

    /** The tag naming the adaptive object: {@value}. */
    public static final String NAME_TAG = "name";

    /** The tag of the change counter naming the reason of the change: {@value}. */
    public static final String REASON_TAG = "reason";

    private static final Reason[] REASONS = Reason.values();

    private final @Nullable String givenName;
    private final String prefix;
    private final String baseUnit;
    /** The builder's tags, without {@value #NAME_TAG}. */
    private final Tags tags;

    /** The changes heard, by {@link Reason#ordinal()}: one atomic add per change. */
    private final AtomicLongArray changes = new AtomicLongArray(REASONS.length);

    /** The monitored object: set once by {@link #monitor}, under {@code this}; read under {@code this}. */
    private @Nullable View view;

    /** The registries bound so far: written and read under {@code this}. */
    private final List<MeterRegistry> bound = new ArrayList<>();

    private AdaptiveCapacityMetrics(Builder b) {
        this.givenName = b.name;
        this.prefix = b.prefix;
        this.baseUnit = b.baseUnit;
        this.tags = Tags.of(b.tags);
    }

    /**
     * Returns metrics tagged {@code name}, with the default prefix and base unit and no other tag.
     * Short for {@code builder(name).build()}.
     *
     * @param name the value of the {@value #NAME_TAG} tag, not blank
     * @return new metrics, monitoring nothing yet
     * @throws NullPointerException if {@code name} is null
     * @throws IllegalArgumentException if {@code name} is blank
     */
    public static AdaptiveCapacityMetrics of(String name) {
        return builder(name).build();
    }

    /**
     * Starts metrics whose {@value #NAME_TAG} tag is the name of the monitored object's semaphore
     * (or fair share): set the prefix, the base unit and the tags, then {@link Builder#build()}.
     *
     * <pre>{@code
     * AdaptiveCapacityMetrics metrics = AdaptiveCapacityMetrics.builder().build();
     * AdaptiveCapacity adaptive = metrics.buildMonitored(
     *         AdaptiveCapacity.builder(Semaphore.builder(20).name("downstream").build())); // name=downstream
     * metrics.bindTo(registry);
     * }</pre>
     *
     * @return a builder
     */
    public static Builder builder() {
        return new Builder(null);
    }

    /**
     * Starts metrics tagged {@code name}, whatever the semaphore's own name: set the prefix, the
     * base unit and the tags, then {@link Builder#build()}.
     *
     * <pre>{@code
     * AdaptiveCapacityMetrics metrics = AdaptiveCapacityMetrics.builder("downstream").prefix("edge").build();
     * }</pre>
     *
     * @param name the value of the {@value #NAME_TAG} tag, not blank
     * @return a builder
     * @throws NullPointerException if {@code name} is null
     * @throws IllegalArgumentException if {@code name} is blank
     */
    public static Builder builder(String name) {
        return new Builder(notBlank("builder", name, "the name"));
    }

    /**
     * The one-call wiring for an {@link AdaptiveCapacity}: new metrics tagged {@code name} are
     * added to {@code builder} as a listener (beside any listener already there), the object is
     * built, and its meters are registered in {@code registry}.
     *
     * <pre>{@code
     * AdaptiveCapacity adaptive = AdaptiveCapacityMetrics.monitor(registry, "downstream",
     *         AdaptiveCapacity.builder(inFlight).maxCapacity(500));
     * }</pre>
     *
     * @param registry the registry of the meters
     * @param name the value of the {@value #NAME_TAG} tag, not blank
     * @param builder the adaptive capacity's builder, configured but not built
     * @return the adaptive capacity, built
     * @throws NullPointerException if an argument is null (nothing is built or registered)
     * @throws IllegalArgumentException if {@code name} is blank, or as {@link AdaptiveCapacity.Builder#build()}
     * @throws IllegalStateException as {@link AdaptiveCapacity.Builder#build()}
     */
    public static AdaptiveCapacity monitor(MeterRegistry registry, String name, AdaptiveCapacity.Builder builder) {
        checkMonitor(registry, name, builder);
        AdaptiveCapacityMetrics metrics = of(name);
        AdaptiveCapacity adaptive = metrics.buildMonitored(builder);
        metrics.bindTo(registry);
        return adaptive;
    }

    /**
     * The one-call wiring for an {@link AdaptiveFairShare}, as
     * {@link #monitor(MeterRegistry, String, AdaptiveCapacity.Builder)}.
     *
     * <pre>{@code
     * AdaptiveFairShare<String> tenants = AdaptiveCapacityMetrics.monitor(registry, "database",
     *         AdaptiveFairShare.builder(database).maxCapacity(200));
     * }</pre>
     *
     * @param registry the registry of the meters
     * @param name the value of the {@value #NAME_TAG} tag, not blank
     * @param builder the adaptive fair share's builder, configured but not built
     * @param <K> the key type
     * @return the adaptive fair share, built
     * @throws NullPointerException if an argument is null (nothing is built or registered)
     * @throws IllegalArgumentException if {@code name} is blank, or as {@link AdaptiveFairShare.Builder#build()}
     * @throws IllegalStateException as {@link AdaptiveFairShare.Builder#build()}
     */
    public static <K> AdaptiveFairShare<K> monitor(
            MeterRegistry registry, String name, AdaptiveFairShare.Builder<K> builder) {
        checkMonitor(registry, name, builder);
        AdaptiveCapacityMetrics metrics = of(name);
        AdaptiveFairShare<K> adaptive = metrics.buildMonitored(builder);
        metrics.bindTo(registry);
        return adaptive;
    }

    private static void checkMonitor(
            @Nullable MeterRegistry registry, @Nullable String name, @Nullable Object builder) {
        if (registry == null) {
            throw new NullPointerException("monitor(null, " + name + ", " + builder + "): the registry is null");
        }
        if (builder == null) {
            throw new NullPointerException("monitor(" + registry + ", " + name + ", null): the builder is null");
        }
        notBlank("monitor", name, "the name");
    }

    /**
     * Adds these metrics to {@code builder} as a listener (beside any listener already there),
     * builds the adaptive capacity and {@linkplain #monitor(AdaptiveCapacity) monitors} it; then
     * call {@link #bindTo}.
     *
     * <pre>{@code
     * AdaptiveCapacity adaptive = metrics.buildMonitored(AdaptiveCapacity.builder(inFlight).maxCapacity(500));
     * metrics.bindTo(registry);
     * }</pre>
     *
     * @param builder the adaptive capacity's builder, configured but not built
     * @return the adaptive capacity, built
     * @throws NullPointerException if {@code builder} is null
     * @throws IllegalStateException if another object is monitored already (nothing is built), or
     *     the object has no name to tag the meters with, or as {@link AdaptiveCapacity.Builder#build()}
     * @throws IllegalArgumentException as {@link AdaptiveCapacity.Builder#build()}
     */
    public synchronized AdaptiveCapacity buildMonitored(AdaptiveCapacity.Builder builder) {
        if (builder == null) {
            throw new NullPointerException("buildMonitored(null): the builder is null (" + this + ")");
        }
        checkFree("buildMonitored(builder)");
        AdaptiveCapacity adaptive = builder.listener(this).build();
        monitor(adaptive);
        return adaptive;
    }

    /**
     * Adds these metrics to {@code builder} as a listener, builds the adaptive fair share and
     * {@linkplain #monitor(AdaptiveFairShare) monitors} it, as
     * {@link #buildMonitored(AdaptiveCapacity.Builder)}.
     *
     * <pre>{@code
     * AdaptiveFairShare<String> tenants = metrics.buildMonitored(AdaptiveFairShare.builder(database));
     * }</pre>
     *
     * @param builder the adaptive fair share's builder, configured but not built
     * @param <K> the key type
     * @return the adaptive fair share, built
     * @throws NullPointerException if {@code builder} is null
     * @throws IllegalStateException if another object is monitored already (nothing is built), or
     *     the object has no name to tag the meters with, or as {@link AdaptiveFairShare.Builder#build()}
     * @throws IllegalArgumentException as {@link AdaptiveFairShare.Builder#build()}
     */
    public synchronized <K> AdaptiveFairShare<K> buildMonitored(AdaptiveFairShare.Builder<K> builder) {
        if (builder == null) {
            throw new NullPointerException("buildMonitored(null): the builder is null (" + this + ")");
        }
        checkFree("buildMonitored(builder)");
        AdaptiveFairShare<K> adaptive = builder.listener(this).build();
        monitor(adaptive);
        return adaptive;
    }

    /**
     * Sets the adaptive capacity that the gauges read. The change counters count what these
     * metrics hear as a listener: add them to the capacity's builder with
     * {@link AdaptiveCapacity.Builder#listener(CapacityListener)} (or use
     * {@link #buildMonitored(AdaptiveCapacity.Builder)}). Calling it again with the same object
     * does nothing.
     *
     * @param adaptive the adaptive capacity to observe
     * @return this, to call {@link #bindTo} next
     * @throws NullPointerException if {@code adaptive} is null
     * @throws IllegalStateException if another object is monitored already, or neither
     *     {@link #builder(String)} nor the semaphore gave a name
     */
    public synchronized AdaptiveCapacityMetrics monitor(AdaptiveCapacity adaptive) {
        if (adaptive == null) {
            throw new NullPointerException("monitor(null): the adaptive capacity is null (" + this + ")");
        }
        return monitor(View.of(adaptive));
    }

    /**
     * Sets the adaptive fair share that the gauges read, as {@link #monitor(AdaptiveCapacity)}.
     *
     * @param adaptive the adaptive fair share to observe
     * @return this, to call {@link #bindTo} next
     * @throws NullPointerException if {@code adaptive} is null
     * @throws IllegalStateException if another object is monitored already, or neither
     *     {@link #builder(String)} nor the fair share gave a name
     */
    public synchronized AdaptiveCapacityMetrics monitor(AdaptiveFairShare<?> adaptive) {
        if (adaptive == null) {
            throw new NullPointerException("monitor(null): the adaptive fair share is null (" + this + ")");
        }
        return monitor(View.of(adaptive));
    }

    private AdaptiveCapacityMetrics monitor(View v) {
        if (view != null && view.target == v.target) {
            return this;
        }
        checkFree("monitor(" + v.target + ")");
        if (givenName == null && v.ownName == null) {
            throw new IllegalStateException("monitor(" + v.target + "): the " + v.kind
                    + " has no name and neither have these metrics; name it in its builder, or use"
                    + " AdaptiveCapacityMetrics.builder(name)");
        }
        this.view = v;
        return this;
    }

    private void checkFree(String call) {
        if (view != null) {
            throw new IllegalStateException(call + ": " + this + " already monitors " + view.target
                    + "; one AdaptiveCapacityMetrics observes one adaptive object, make another for this one");
        }
    }

    /**
     * Counts a change of the capacity under its reason. Called by the adaptive object.
     *
     * @param oldCapacity the capacity before
     * @param newCapacity the capacity now
     * @param reason why it changed
     */
    @Override
    public void capacityChanged(long oldCapacity, long newCapacity, Reason reason) {
        changes.incrementAndGet(reason.ordinal());
    }

    /**
     * Registers the meters in {@code registry}: the gauges of the object given to
     * {@link #monitor}, the drop counter and the change counters. Binding to several registries
     * shows the same values in each; binding to the same one again adds nothing.
     *
     * @param registry the registry
     * @throws NullPointerException if {@code registry} is null
     * @throws IllegalStateException if no adaptive object is monitored yet
     */
    @Override
    public synchronized void bindTo(MeterRegistry registry) {
        if (registry == null) {
            throw new NullPointerException("bindTo(null): the registry is null (" + this + ")");
        }
        View v = view;
        if (v == null) {
            throw new IllegalStateException("bindTo(" + registry + "): " + this
                    + " monitors nothing yet; call monitor(adaptive) or buildMonitored(builder) first");
        }
        for (MeterRegistry r : bound) {
            if (r == registry) {
                return;
            }
        }
        Tags all = tags.and(NAME_TAG, name(v));
        Object t = v.target;
        gauge(registry, "capacity", "the present capacity, set by the algorithm", all, t, v.capacity);
        gauge(registry, "capacity.min", "the least capacity", all, t, v.min);
        gauge(registry, "capacity.max", "the greatest capacity", all, t, v.max);
        gauge(registry, "in.flight", "the permits held by sampled uses", all, t, v.inFlight);
        TimeGauge.builder(prefix + ".latency.baseline", t, TimeUnit.NANOSECONDS, v.baseline)
                .description("the uncongested latency the built-in algorithm compares each window with")
                .tags(all)
                .register(registry);
        TimeGauge.builder(prefix + ".latency.window", t, TimeUnit.NANOSECONDS, v.window)
                .description("the mean hold time of the successes of the last window")
                .tags(all)
                .register(registry);
        FunctionCounter.builder(prefix + ".drops", t, v.drops)
                .description("sampled uses that ended as drops (timeouts)")
                .tags(all)
                .register(registry);
        for (Reason reason : REASONS) {
            int i = reason.ordinal();
            FunctionCounter.builder(prefix + ".capacity.changes", changes, c -> c.get(i))
                    .description("changes of the capacity, by reason")
                    .tags(all)
                    .tag(REASON_TAG, reasonTag(reason))
                    .register(registry);
        }
        bound.add(registry);
    }

    private <T> void gauge(
            MeterRegistry registry, String name, String description, Tags all, T target, ToDoubleFunction<T> value) {
        Gauge.builder(prefix + "." + name, target, value)
                .description(description)
                .baseUnit(baseUnit)
                .tags(all)
                .register(registry);
    }

    private String name(View v) {
        String n = givenName != null ? givenName : v.ownName;
        if (n == null) {
            throw new IllegalStateException("no name for " + v.target); // monitor() refused it
        }
        return n;
    }

    /**
     * The value of the {@value #REASON_TAG} tag for a reason: its name in lower case,
     * {@code drop_cut} for {@link Reason#DROP_CUT}.
     *
     * @param reason a reason
     * @return its tag value
     * @throws NullPointerException if {@code reason} is null
     */
    public static String reasonTag(Reason reason) {
        return reason.name().toLowerCase(Locale.ROOT);
    }

    /**
     * Returns a description for logs.
     *
     * @return for example {@code "AdaptiveCapacityMetrics[downstream, handoff.adaptive, tags [], base unit permits]"}
     */
    @Override
    public synchronized String toString() {
        View v = view;
        String n = givenName != null ? givenName : v != null ? v.ownName : null;
        return "AdaptiveCapacityMetrics[" + (n == null ? "no name yet" : n) + ", " + prefix + ", tags " + tags
                + ", base unit " + baseUnit + "]";
    }

    /** What the gauges read, for either kind of adaptive object. */
    private static final class View {
        final Object target;
        final String kind;
        final @Nullable String ownName;
        final ToDoubleFunction<Object> capacity;
        final ToDoubleFunction<Object> min;
        final ToDoubleFunction<Object> max;
        final ToDoubleFunction<Object> inFlight;
        final ToDoubleFunction<Object> baseline;
        final ToDoubleFunction<Object> window;
        final ToDoubleFunction<Object> drops;

        private View(
                Object target,
                String kind,
                @Nullable String ownName,
                ToDoubleFunction<Object> capacity,
                ToDoubleFunction<Object> min,
                ToDoubleFunction<Object> max,
                ToDoubleFunction<Object> inFlight,
                ToDoubleFunction<Object> baseline,
                ToDoubleFunction<Object> window,
                ToDoubleFunction<Object> drops) {
            this.target = target;
            this.kind = kind;
            this.ownName = ownName;
            this.capacity = capacity;
            this.min = min;
            this.max = max;
            this.inFlight = inFlight;
            this.baseline = baseline;
            this.window = window;
            this.drops = drops;
        }

        static View of(AdaptiveCapacity a) {
            return new View(
                    a,
                    "adaptive capacity's semaphore",
                    a.semaphore().name(),
                    o -> ((AdaptiveCapacity) o).capacity(),
                    o -> ((AdaptiveCapacity) o).minCapacity(),
                    o -> ((AdaptiveCapacity) o).maxCapacity(),
                    o -> ((AdaptiveCapacity) o).inFlight(),
                    o -> ((AdaptiveCapacity) o).baselineNanos(),
                    o -> ((AdaptiveCapacity) o).windowLatencyNanos(),
                    o -> ((AdaptiveCapacity) o).drops());
        }

        static View of(AdaptiveFairShare<?> a) {
            return new View(
                    a,
                    "adaptive fair share's fair share",
                    a.fairShare().name(),
                    o -> ((AdaptiveFairShare<?>) o).capacity(),
                    o -> ((AdaptiveFairShare<?>) o).minCapacity(),
                    o -> ((AdaptiveFairShare<?>) o).maxCapacity(),
                    o -> ((AdaptiveFairShare<?>) o).inFlight(),
                    o -> ((AdaptiveFairShare<?>) o).baselineNanos(),
                    o -> ((AdaptiveFairShare<?>) o).windowLatencyNanos(),
                    o -> ((AdaptiveFairShare<?>) o).drops());
        }
    }

    private static String notBlank(String call, @Nullable String value, String what) {
        return MeterOptions.notBlank(call, value, what);
    }

    /** The options of an {@link AdaptiveCapacityMetrics}, from {@link AdaptiveCapacityMetrics#builder()}. Not thread-safe. */
    public static final class Builder {
        private final @Nullable String name;
        private String prefix = DEFAULT_PREFIX;
        private String baseUnit = DEFAULT_BASE_UNIT;
        private final List<Tag> tags = new ArrayList<>();

        private Builder(@Nullable String name) {
            this.name = name;
        }

        /**
         * Sets the prefix of every meter name instead of {@value #DEFAULT_PREFIX}: with
         * {@code "edge"}, the capacity gauge is {@code edge.capacity}.
         *
         * @param prefix the prefix, not blank, neither starting nor ending with a dot
         * @return this builder
         * @throws NullPointerException if {@code prefix} is null
         * @throws IllegalArgumentException if {@code prefix} is blank or starts or ends with a dot
         */
        public Builder prefix(String prefix) {
            this.prefix = MeterOptions.prefix(prefix, "\".capacity\", \".drops\", ...");
            return this;
        }

        /**
         * Sets the base unit of the meters that count permits (capacity, its bounds, in flight)
         * instead of {@value #DEFAULT_BASE_UNIT}.
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
         * Adds tags to every meter, as key-value pairs: {@code tags("service", "ingest")}.
         *
         * @param keyValues keys and values, alternately
         * @return this builder
         * @throws NullPointerException if {@code keyValues} or one of them is null
         * @throws IllegalArgumentException if there is an odd number of them, or a key is
         *     {@value #NAME_TAG} or {@value #REASON_TAG} (this class's own tags)
         */
        public Builder tags(String... keyValues) {
            this.tags.addAll(MeterOptions.pairs(keyValues, (key, arguments) -> {
                if (key.equals(NAME_TAG) || key.equals(REASON_TAG)) {
                    throw new IllegalArgumentException("tags(" + arguments + "): the key \"" + key
                            + "\" is AdaptiveCapacityMetrics' own (" + NAME_TAG + " names the object, " + REASON_TAG
                            + " tags the changes); choose another key");
                }
            }));
            return this;
        }

        /**
         * Builds the metrics: then add them as the adaptive builder's listener and
         * {@link AdaptiveCapacityMetrics#monitor(AdaptiveCapacity) monitor} the object (or
         * {@link AdaptiveCapacityMetrics#buildMonitored(AdaptiveCapacity.Builder) both at once}),
         * and {@link AdaptiveCapacityMetrics#bindTo bind} a registry.
         *
         * @return new metrics, monitoring nothing yet
         */
        public AdaptiveCapacityMetrics build() {
            return new AdaptiveCapacityMetrics(this);
        }
    }
}
