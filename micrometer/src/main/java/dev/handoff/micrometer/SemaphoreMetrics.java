// SPDX-License-Identifier: Apache-2.0
package dev.handoff.micrometer;

import dev.handoff.FairShareSemaphore;
import dev.handoff.Mutex;
import dev.handoff.PrimitiveBuilder;
import dev.handoff.PrimitiveView;
import dev.handoff.RwLock;
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
import org.jspecify.annotations.Nullable;

/**
 * Micrometer metrics for one {@link Semaphore}, {@link Mutex} or {@link RwLock}: the primitive's
 * {@link WaitListener} (it times every wait) and a {@link MeterBinder} (it registers the meters).
 * The listener must exist before the primitive, the gauges need the primitive, so the wiring takes
 * three steps:
 *
 * <pre>{@code
 * SemaphoreMetrics metrics = SemaphoreMetrics.builder().baseUnit("bytes").build();
 * Semaphore uploads = Semaphore.builder(64L << 20)
 *         .name("uploads")                    // the name, written once: also the meters' name tag
 *         .listener(metrics)                  // 1. times the waits
 *         .build();
 * metrics.monitor(uploads)                    // 2. the semaphore the gauges read
 *         .bindTo(registry);                  // 3. the meters, in any number of registries
 * }</pre>
 *
 * <p>or, when this is the primitive's only listener and the defaults suit, in one line:
 * {@code Semaphore uploads = SemaphoreMetrics.monitor(registry, Semaphore.builder(64L << 20).name("uploads"));}
 * ({@link #monitor(MeterRegistry, PrimitiveBuilder)}), or with options in two:
 * {@code Semaphore uploads = metrics.buildMonitored(Semaphore.builder(64L << 20).name("uploads"));}
 * then {@code metrics.bindTo(registry)}. A {@link Mutex} and an {@link RwLock} are wired the same
 * way ({@code Mutex.builder().name("journal").listener(metrics)}, {@link #monitor(PrimitiveView)},
 * {@link #buildMonitored(PrimitiveBuilder)}).
 *
 * <p><b>The name.</b> Every meter has the tag {@value #NAME_TAG}. Its value is the name given to
 * {@link #builder(String)} if there is one, else the monitored primitive's own name
 * ({@link Semaphore#name()}, {@link Mutex#name()}, {@link RwLock#name()}), so name the primitive
 * and build the metrics with {@link #builder()}: the name is written once and is the same in
 * {@code toString()}, in the metrics and in the JFR events. A name given to
 * {@code builder(String)} wins over the primitive's (to tag the metrics differently from the
 * logs); {@link #monitor} refuses a primitive when neither has a name.
 *
 * <p><b>Meters of a {@link Semaphore}</b> (default prefix {@value #DEFAULT_PREFIX}; every meter has
 * the {@code name} tag and the builder's tags):
 * <table>
 * <caption>The meters of a semaphore</caption>
 * <tr><th>name</th><th>type</th><th>unit</th><th>what</th></tr>
 * <tr><td>{@code handoff.semaphore.capacity}</td><td>gauge</td><td>base unit</td><td>{@link Semaphore#capacity()}</td></tr>
 * <tr><td>{@code handoff.semaphore.available}</td><td>gauge</td><td>base unit</td><td>{@link Semaphore#availablePermits()}</td></tr>
 * <tr><td>{@code handoff.semaphore.queue.length}</td><td>gauge</td><td></td><td>{@link Semaphore#queueLength()}: the waiting acquisitions</td></tr>
 * <tr><td>{@code handoff.semaphore.queue.permits}</td><td>gauge</td><td>base unit</td><td>{@link Semaphore#queuedPermits()}: the permits they wait for</td></tr>
 * <tr><td>{@code handoff.semaphore.wait}</td><td>timer, tag {@code outcome}</td><td>time</td><td>one record per wait, when it ends</td></tr>
 * <tr><td>{@code handoff.semaphore.wait.permits}</td><td>distribution summary, tag {@code outcome}</td><td>base unit</td><td>the weight of each wait</td></tr>
 * <tr><td>{@code handoff.semaphore.rejected}</td><td>counter</td><td></td><td>acquisitions refused by the queue bounds (load shedding)</td></tr>
 * </table>
 *
 * <p><b>Meters of a {@link Mutex}</b> (default prefix {@value #DEFAULT_MUTEX_PREFIX}):
 * {@code handoff.mutex.locked} (gauge: 1 while locked, else 0, {@link Mutex#isLocked()}),
 * {@code handoff.mutex.queue.length} (gauge, {@link Mutex#queueLength()}), {@code handoff.mutex.wait}
 * (timer, tag {@code outcome}) and {@code handoff.mutex.rejected} (counter).
 *
 * <p><b>Meters of an {@link RwLock}</b> (default prefix {@value #DEFAULT_RW_LOCK_PREFIX}):
 * {@code handoff.rwlock.write.locked} (gauge: 1 while a writer holds it, else 0,
 * {@link RwLock#isWriteLocked()}), {@code handoff.rwlock.read.locks} (gauge: the readers holding
 * it, {@link RwLock#readLockCount()}), {@code handoff.rwlock.queue.length} (gauge, readers and
 * writers waiting), {@code handoff.rwlock.wait} (timer, tag {@code outcome}) and
 * {@code handoff.rwlock.rejected} (counter).
 *
 * <p>A lock's waits all weigh the same (a mutex) or one of two weights (a reader 1, a writer
 * {@code maxReaders}), so the locks have no {@code wait.permits} summary, and the base unit, which
 * only the semaphore's permit meters carry, does not apply to them. A prefix set with
 * {@link Builder#prefix(String)} replaces the default of every kind.
 *
 * <p>The {@code outcome} tag is one of {@code granted}, {@code cancelled}, {@code timed_out},
 * {@code closed}, {@code failed} (see {@link WaitOutcome}); the timers (and summaries) of all five
 * are registered at once, so they read zero until something happens. Only waits are timed: an
 * acquisition granted at once is not counted anywhere (the primitive's fast path stays as fast as
 * without a listener). Percentiles and histograms are configured as usual, with a
 * {@code MeterFilter}.
 *
 * <p><b>Keep a strong reference to the primitive.</b> Like every Micrometer gauge, these hold the
 * primitive weakly: a primitive that nothing else references is collected, and its gauges then
 * read {@code NaN}.
 *
 * <p><b>One primitive each.</b> A {@code SemaphoreMetrics} observes exactly one primitive: give it
 * to one builder only (a listener is not told which primitive calls it, so two primitives sharing
 * it would mix their waits). When the primitives are named, a second {@code build()} with this as
 * listener is refused (see {@link #attached(String)}), and {@link #monitor} refuses a second
 * primitive, or one other than the named primitive this listens to. Waits that end before
 * {@link #bindTo} are not recorded anywhere. Give each primitive of one registry its own name (or
 * tags): Micrometer keeps the first gauge registered under a name and tags, so a second
 * primitive registered with the same ones would not be shown.
 *
 * <p>Thread-safe. The listener methods allocate nothing and take no lock.
 */
public final class SemaphoreMetrics implements WaitListener, MeterBinder {

    /** The default prefix of every meter name of a {@link Semaphore}: {@value}. */
    public static final String DEFAULT_PREFIX = "handoff.semaphore";

    /** The default prefix of every meter name of a {@link Mutex}: {@value}. */
    public static final String DEFAULT_MUTEX_PREFIX = "handoff.mutex";

    /** The default prefix of every meter name of an {@link RwLock}: {@value}. */
    public static final String DEFAULT_RW_LOCK_PREFIX = "handoff.rwlock";

    /** The default base unit of the permit meters of a semaphore: {@value}. */
    public static final String DEFAULT_BASE_UNIT = "permits";

    /** The tag naming the primitive: {@value}. */
    public static final String NAME_TAG = "name";

    /** The tag of the wait timers and summaries naming how the wait ended: {@value}. */
    public static final String OUTCOME_TAG = "outcome";

    private static final WaitOutcome[] OUTCOMES = WaitOutcome.values();

    /** The name given to {@link #builder(String)}, or null: then the primitive's. */
    private final String givenName;
    /** The prefix given to the builder, or null: then the default of the primitive's kind. */
    private final String givenPrefix;

    private final String baseUnit;
    /** The builder's tags, without {@value #NAME_TAG}. */
    private final Tags tags;

    /**
     * The monitored {@link Semaphore}, {@link Mutex} or {@link RwLock}: set once by {@link #monitor}
     * or {@link #buildMonitored}, under {@code this}; read under {@code this}.
     */
    private PrimitiveView primitive;

    /** Set by the one-line monitor of a built primitive: only gauges, since this is not its listener. */
    private boolean gaugesOnly;

    /** The name {@link #attached(String)} was told, or null: written and read under {@code this}. */
    private String attachedName;

    /**
     * The meters of every registry bound so far: replaced (copy on write) under {@code this},
     * read without a lock by the listener methods.
     */
    private volatile Meters[] bound = new Meters[0];

    private SemaphoreMetrics(Builder b) {
        this.givenName = b.name;
        this.givenPrefix = b.prefix;
        this.baseUnit = b.baseUnit;
        this.tags = Tags.of(b.tags);
    }

    /**
     * Returns metrics tagged {@code name}, with the default prefix and base unit and no other tag.
     * Short for {@code builder(name).build()}. To take the name from the primitive instead, use
     * {@code builder().build()}.
     *
     * @param name the value of the {@code name} tag, not blank
     * @return new metrics, monitoring nothing yet
     * @throws NullPointerException if {@code name} is null
     * @throws IllegalArgumentException if {@code name} is blank
     */
    public static SemaphoreMetrics of(String name) {
        return builder(name).build();
    }

    /**
     * Starts metrics whose {@code name} tag is the monitored primitive's own name (given to its
     * builder's {@code name(String)}): set the prefix, the base unit and the tags, then
     * {@link Builder#build()}. {@link #monitor} refuses an unnamed primitive.
     *
     * <pre>{@code
     * SemaphoreMetrics metrics = SemaphoreMetrics.builder().build();
     * Mutex journal = metrics.buildMonitored(Mutex.builder().name("journal")); // tagged name=journal
     * metrics.bindTo(registry);
     * }</pre>
     *
     * @return a builder
     */
    public static Builder builder() {
        return new Builder(null);
    }

    /**
     * Starts metrics tagged {@code name}, whatever the monitored primitive's own name: set the
     * prefix, the base unit and the tags, then {@link Builder#build()}.
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
     * Sets the primitive that the gauges read: a {@link Semaphore}, {@link Mutex}, {@link RwLock}
     * or {@link FairShareSemaphore}. Call it once the primitive is built with this as its
     * {@link dev.handoff.PrimitiveBuilder#listener listener} (a fair share has listeners of its own
     * type: its waits are not timed here, its gauges are); calling it again with the same primitive
     * does nothing. The meters are those of the primitive's kind (see the class documentation).
     *
     * <pre>{@code
     * SemaphoreMetrics metrics = SemaphoreMetrics.builder().build();
     * Mutex journal = Mutex.builder().name("journal").listener(metrics).build();
     * metrics.monitor(journal).bindTo(registry);
     * }</pre>
     *
     * @param primitive the primitive this listens to
     * @return this, to call {@link #bindTo} next
     * @throws NullPointerException if {@code primitive} is null
     * @throws IllegalArgumentException if neither {@code primitive} nor this has a name, or if this
     *     is the listener of a primitive of another name
     * @throws IllegalStateException if another primitive is monitored already
     */
    public SemaphoreMetrics monitor(PrimitiveView primitive) {
        return monitorPrimitive(kind(primitive), primitive, primitive == null ? null : primitive.name());
    }

    private synchronized SemaphoreMetrics monitorPrimitive(String what, PrimitiveView p, String primitiveName) {
        if (p == null) {
            throw new NullPointerException("monitor(null): " + what + " is null (" + describe() + ")");
        }
        if (primitive == p) {
            return this;
        }
        if (primitive != null) {
            throw new IllegalStateException("monitor(" + p + "): " + describe() + " already monitors " + primitive
                    + "; one SemaphoreMetrics observes one primitive, make another for this one");
        }
        checkNamed("monitor(" + p + ")", what, primitiveName);
        primitive = p;
        return this;
    }

    /** Refuses a primitive that leaves the name tag empty, or that is not the named one this listens to. */
    private void checkNamed(String call, String what, String primitiveName) {
        if (givenName == null && primitiveName == null) {
            throw new IllegalArgumentException(call + ": neither " + what + " nor this SemaphoreMetrics has a name,"
                    + " and every meter is tagged with one; name " + what + " in its builder (.name(\"uploads\"))"
                    + " or the metrics (SemaphoreMetrics.builder(\"uploads\"))");
        }
        if (attachedName != null && !attachedName.equals(primitiveName)) {
            throw new IllegalArgumentException(
                    call + ": this SemaphoreMetrics is the listener of the primitive named \""
                            + attachedName + "\", not of " + what + " named "
                            + (primitiveName == null ? "nothing" : "\"" + primitiveName + "\"")
                            + "; monitor the primitive it listens to");
        }
    }

    /**
     * Builds a primitive with this as its only wait listener, and monitors it: short for
     * {@code monitor(builder.listener(this).build())}. To combine this with other listeners,
     * use {@link WaitListener#all} and {@link #monitor(PrimitiveView)} instead.
     *
     * @param builder the builder of a {@link Semaphore}, {@link Mutex} or {@link RwLock}, with its
     *     other options set (its name, best); its listener is replaced
     * @param <P> the primitive's type
     * @return the new primitive, monitored by this
     * @throws NullPointerException if {@code builder} is null
     * @throws IllegalStateException if this monitors a primitive already (nothing is built)
     * @throws IllegalArgumentException if neither the primitive nor this has a name (the primitive
     *     built is dropped, nothing is monitored)
     */
    public <P extends PrimitiveView> P buildMonitored(PrimitiveBuilder<?, WaitListener, P> builder) {
        checkBuildable(builder);
        P built = builder.listener(this).build();
        monitor(built);
        return built;
    }

    /**
     * The one-line wiring: builds the primitive with a new {@code SemaphoreMetrics} as its only
     * wait listener, monitors it and binds the meters to {@code registry}. The meters are named
     * and tagged as {@link #builder()} makes them, with the primitive's name as the
     * {@value #NAME_TAG} tag, so name it in its builder. For a prefix, a base unit, tags or more
     * listeners, wire it in the three steps of the class documentation.
     *
     * <pre>{@code
     * Semaphore uploads = SemaphoreMetrics.monitor(registry, Semaphore.builder(64L << 20).name("uploads"));
     * Mutex journal = SemaphoreMetrics.monitor(registry, Mutex.builder().name("journal"));
     * RwLock index = SemaphoreMetrics.monitor(registry, RwLock.builder(64).name("index"));
     * }</pre>
     *
     * @param registry the registry of the meters
     * @param builder the builder of a {@link Semaphore}, {@link Mutex} or {@link RwLock}, with its
     *     other options set and a name; its listener is replaced
     * @param <P> the primitive's type
     * @return the new primitive, with its meters in {@code registry}
     * @throws NullPointerException if {@code registry} or {@code builder} is null
     * @throws IllegalArgumentException if the primitive has no name (the primitive built is
     *     dropped, nothing is registered)
     */
    public static <P extends PrimitiveView> P monitor(
            MeterRegistry registry, PrimitiveBuilder<?, WaitListener, P> builder) {
        SemaphoreMetrics metrics = forOneLine(registry, builder, "builder");
        P built = metrics.buildMonitored(builder);
        metrics.bindTo(registry);
        return built;
    }

    /**
     * The one-line wiring of a primitive already built, whatever its kind: registers the gauges
     * of its kind in {@code registry} (the queue's length and weight, and a semaphore's capacity
     * and free permits, a lock's state), read from the primitive itself. The wait timers and the
     * rejection counter need this as the primitive's listener: build it with
     * {@link #monitor(MeterRegistry, PrimitiveBuilder)} for those.
     *
     * <pre>{@code
     * SemaphoreMetrics.monitor(registry, tenants);   // a FairShareSemaphore built elsewhere, named "tenants"
     * }</pre>
     *
     * @param registry the registry of the gauges
     * @param primitive a named {@link Semaphore}, {@link Mutex}, {@link RwLock} or {@link FairShareSemaphore}
     * @return the metrics that read it, bound to {@code registry}
     * @throws NullPointerException if {@code registry} or {@code primitive} is null
     * @throws IllegalArgumentException if the primitive has no name (nothing is registered)
     */
    public static SemaphoreMetrics monitor(MeterRegistry registry, PrimitiveView primitive) {
        SemaphoreMetrics metrics = forOneLine(registry, primitive, "primitive");
        metrics.gaugesOnly = true;
        metrics.monitor(primitive).bindTo(registry);
        return metrics;
    }

    private static SemaphoreMetrics forOneLine(MeterRegistry registry, Object argument, String what) {
        if (registry == null) {
            throw new NullPointerException("monitor(null, " + what + "): the registry is null");
        }
        if (argument == null) {
            throw new NullPointerException("monitor(registry, null): the " + what + " is null");
        }
        return builder().build();
    }

    private synchronized void checkBuildable(Object builder) {
        if (builder == null) {
            throw new NullPointerException("buildMonitored(null): the builder is null (" + describe() + ")");
        }
        if (primitive != null) {
            throw new IllegalStateException("buildMonitored(builder): " + describe() + " already monitors " + primitive
                    + "; one SemaphoreMetrics observes one primitive, make another for a new one");
        }
    }

    /**
     * Told by the builder of a named primitive that this is its listener (see
     * {@link WaitListener#attached(String)}): remembered, so that {@link #monitor} can refuse a
     * primitive of another name. A second call means a second primitive would share this
     * listener and mix its waits into these meters: refused, so that {@code build()} fails.
     *
     * @param name the primitive's name
     * @throws IllegalStateException if this is the listener of a named primitive already
     */
    @Override
    public synchronized void attached(String name) {
        if (attachedName != null) {
            throw new IllegalStateException("attached(\"" + name + "\"): " + describe()
                    + " is the listener of the primitive named \"" + attachedName + "\" already; one SemaphoreMetrics"
                    + " observes one primitive, make another for this one");
        }
        attachedName = name;
    }

    /**
     * Registers the meters in {@code registry}: the gauges of the monitored primitive, and the
     * timers, summaries and counter that this listener records from now on. Binding to a registry
     * bound before does nothing; binding to several registries records into each.
     *
     * @param registry the registry
     * @throws NullPointerException if {@code registry} is null
     * @throws IllegalStateException if nothing is monitored yet: call {@link #monitor(PrimitiveView)}
     *     (or {@link #buildMonitored(PrimitiveBuilder)}) first
     */
    @Override
    public synchronized void bindTo(MeterRegistry registry) {
        if (registry == null) {
            throw new NullPointerException("bindTo(null): the registry is null (" + describe() + ")");
        }
        if (primitive == null) {
            throw new IllegalStateException("bindTo(" + registry.getClass().getSimpleName() + "): " + describe()
                    + " monitors nothing yet; call monitor(semaphore) first");
        }
        Meters[] current = bound;
        for (Meters m : current) {
            if (m.registry == registry) {
                return;
            }
        }
        String prefix = prefix();
        Tags tags = Tags.of(NAME_TAG, name()).and(this.tags);
        boolean weighted = primitive instanceof Semaphore;
        registerGauges(registry, prefix, tags);
        if (gaugesOnly) {
            bound = append(current, new Meters(registry, null, null, null));
            return;
        }
        Timer[] waits = new Timer[OUTCOMES.length];
        DistributionSummary[] weights = weighted ? new DistributionSummary[OUTCOMES.length] : null;
        for (WaitOutcome o : OUTCOMES) {
            String outcome = outcomeTag(o);
            waits[o.ordinal()] = Timer.builder(prefix + ".wait")
                    .description("How long callers waited in the queue, by how the wait ended")
                    .tags(tags)
                    .tag(OUTCOME_TAG, outcome)
                    .register(registry);
            if (weighted) {
                weights[o.ordinal()] = DistributionSummary.builder(prefix + ".wait.permits")
                        .description("The permits each waiting acquisition waited for, by how the wait ended")
                        .baseUnit(baseUnit)
                        .tags(tags)
                        .tag(OUTCOME_TAG, outcome)
                        .register(registry);
            }
        }
        Counter rejected = Counter.builder(prefix + ".rejected")
                .description("Callers refused at once because the wait queue was full")
                .tags(tags)
                .register(registry);
        bound = append(current, new Meters(registry, waits, weights, rejected));
    }

    /** How messages name the primitive: by its kind. */
    private static String kind(@Nullable PrimitiveView p) {
        if (p instanceof Semaphore) {
            return "the semaphore";
        }
        if (p instanceof Mutex) {
            return "the mutex";
        }
        if (p instanceof RwLock) {
            return "the lock";
        }
        return p instanceof FairShareSemaphore ? "the fair share" : "the primitive";
    }

    private static Meters[] append(Meters[] current, Meters m) {
        Meters[] next = Arrays.copyOf(current, current.length + 1);
        next[current.length] = m;
        return next;
    }

    /**
     * The gauges every primitive has (its queue), and those of its kind: a semaphore's capacity and
     * free permits (also a fair share's), a mutex's state, a read-write lock's writer and readers.
     */
    private void registerGauges(MeterRegistry registry, String prefix, Tags tags) {
        PrimitiveView view = primitive;
        Gauge.builder(prefix + ".queue.length", view, PrimitiveView::queueLength)
                .description("The acquisitions waiting in the queue")
                .tags(tags)
                .register(registry);
        if (view instanceof Semaphore semaphore) {
            Gauge.builder(prefix + ".queue.permits", view, PrimitiveView::queuedPermits)
                    .description("The permits the waiting acquisitions wait for")
                    .baseUnit(baseUnit)
                    .tags(tags)
                    .register(registry);
            Gauge.builder(prefix + ".capacity", semaphore, Semaphore::capacity)
                    .description("The semaphore's capacity")
                    .baseUnit(baseUnit)
                    .tags(tags)
                    .register(registry);
            Gauge.builder(prefix + ".available", semaphore, Semaphore::availablePermits)
                    .description("The permits held by nobody and not handed to a waiter")
                    .baseUnit(baseUnit)
                    .tags(tags)
                    .register(registry);
        } else if (view instanceof FairShareSemaphore<?> pool) {
            Gauge.builder(prefix + ".queue.permits", view, PrimitiveView::queuedPermits)
                    .description("The permits the waiting acquisitions wait for")
                    .baseUnit(baseUnit)
                    .tags(tags)
                    .register(registry);
            Gauge.builder(prefix + ".capacity", pool, FairShareSemaphore::capacity)
                    .description("The fair share's capacity, across all keys")
                    .baseUnit(baseUnit)
                    .tags(tags)
                    .register(registry);
            Gauge.builder(prefix + ".available", pool, FairShareSemaphore::availablePermits)
                    .description("The permits held by no key and not handed to a waiter")
                    .baseUnit(baseUnit)
                    .tags(tags)
                    .register(registry);
        } else if (view instanceof Mutex mutex) {
            Gauge.builder(prefix + ".locked", mutex, m -> m.isLocked() ? 1 : 0)
                    .description("1 while the mutex is locked, else 0")
                    .tags(tags)
                    .register(registry);
        } else if (view instanceof RwLock lock) {
            Gauge.builder(prefix + ".write.locked", lock, l -> l.isWriteLocked() ? 1 : 0)
                    .description("1 while a writer holds the lock, else 0")
                    .tags(tags)
                    .register(registry);
            Gauge.builder(prefix + ".read.locks", lock, RwLock::readLockCount)
                    .description("The readers holding the lock")
                    .tags(tags)
                    .register(registry);
        }
    }

    /**
     * Not recorded: the gauges read the queue itself. See {@link WaitListener#queued}.
     *
     * @param permits the weight that waits
     * @param waitersAhead the queue length at entry
     */
    @Override
    public void queued(long permits, int waitersAhead) {}

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
            if (m.waits == null) {
                continue; // bound gauges only
            }
            m.waits[i].record(waitNanos, TimeUnit.NANOSECONDS);
            if (m.weights != null) {
                m.weights[i].record(permits);
            }
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
            if (m.rejected != null) {
                m.rejected.increment();
            }
        }
    }

    /**
     * Returns the value of the {@code name} tag: the name given to {@link #builder(String)}, else
     * the monitored primitive's name, else {@code null} (nothing monitored yet, and no name given).
     *
     * @return the name the meters are tagged with, or {@code null} if not known yet
     */
    public synchronized @Nullable String name() {
        if (givenName != null) {
            return givenName;
        }
        return primitive == null ? null : primitive.name();
    }

    /**
     * Returns the prefix of the meter names: the one given to {@link Builder#prefix(String)}, else
     * the default of the monitored primitive's kind ({@value #DEFAULT_PREFIX} for a semaphore and
     * while nothing is monitored, {@value #DEFAULT_MUTEX_PREFIX}, {@value #DEFAULT_RW_LOCK_PREFIX}).
     *
     * @return the prefix
     */
    public synchronized String prefix() {
        if (givenPrefix != null) {
            return givenPrefix;
        }
        if (primitive instanceof Mutex) {
            return DEFAULT_MUTEX_PREFIX;
        }
        return primitive instanceof RwLock ? DEFAULT_RW_LOCK_PREFIX : DEFAULT_PREFIX;
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

    /** For messages: {@code SemaphoreMetrics "uploads"}, or {@code SemaphoreMetrics (unnamed)}. */
    private String describe() {
        String name = name();
        return name == null ? "SemaphoreMetrics (unnamed)" : "SemaphoreMetrics \"" + name + "\"";
    }

    /**
     * Returns a description for logs.
     *
     * @return for example {@code "SemaphoreMetrics[uploads, handoff.semaphore, tags [service=ingest], base unit bytes]"}
     */
    @Override
    public synchronized String toString() {
        String name = name();
        return "SemaphoreMetrics[" + (name == null ? "unnamed" : name) + ", " + prefix() + ", tags " + tags
                + ", base unit " + baseUnit + "]";
    }

    /** The meters of one registry. */
    private static final class Meters {
        final MeterRegistry registry;
        final Timer @Nullable [] waits;
        final DistributionSummary @Nullable [] weights;
        final @Nullable Counter rejected;

        Meters(
                MeterRegistry registry,
                Timer @Nullable [] waits,
                DistributionSummary @Nullable [] weights,
                @Nullable Counter rejected) {
            this.registry = registry;
            this.waits = waits;
            this.weights = weights;
            this.rejected = rejected;
        }
    }

    private static String notBlank(String call, @Nullable String value, String what) {
        return MeterOptions.notBlank(call, value, what);
    }

    /**
     * The options of a {@link SemaphoreMetrics}: from {@link SemaphoreMetrics#builder()} (the
     * primitive's name) or {@link SemaphoreMetrics#builder(String)}. Not thread-safe.
     */
    public static final class Builder {
        /** Null: the primitive's name. */
        private final String name;
        /** Null: the default of the primitive's kind. */
        private String prefix;

        private String baseUnit = DEFAULT_BASE_UNIT;
        private final List<Tag> tags = new ArrayList<>();

        private Builder(String name) {
            this.name = name;
        }

        /**
         * Sets the prefix of every meter name, instead of the default of the monitored primitive's
         * kind ({@value #DEFAULT_PREFIX}, {@value #DEFAULT_MUTEX_PREFIX},
         * {@value #DEFAULT_RW_LOCK_PREFIX}): with {@code "uploads.limiter"}, the timer is
         * {@code uploads.limiter.wait}.
         *
         * @param prefix the prefix, not blank, neither starting nor ending with a dot
         * @return this builder
         * @throws NullPointerException if {@code prefix} is null
         * @throws IllegalArgumentException if {@code prefix} is blank or starts or ends with a dot
         */
        public Builder prefix(String prefix) {
            this.prefix = MeterOptions.prefix(prefix, "\".wait\", \".capacity\", ...");
            return this;
        }

        /**
         * Sets the base unit of the meters that count permits (capacity, available, queued
         * permits, waited permits), instead of {@value #DEFAULT_BASE_UNIT}: for a semaphore whose
         * permits are bytes, {@code "bytes"} (Micrometer's {@code BaseUnits.BYTES}). A mutex's or
         * read-write lock's meters count callers, not permits: the base unit does not apply.
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
            return tags(MeterOptions.pairs(keyValues, (key, arguments) -> {})); // own keys: checked there
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
                            + "\" is SemaphoreMetrics' own (" + NAME_TAG
                            + " is the primitive's name or the one given to"
                            + " builder(name), "
                            + OUTCOME_TAG + " tags the waits); choose another key");
                }
                added.add(t);
            }
            this.tags.addAll(added);
            return this;
        }

        /**
         * Builds the metrics: give them to the primitive's builder
         * ({@link dev.handoff.PrimitiveBuilder#listener Semaphore.Builder.listener(..)}, {@link dev.handoff.PrimitiveBuilder#listener Mutex.Builder.listener(..)},
         * {@link dev.handoff.PrimitiveBuilder#listener RwLock.Builder.listener(..)}), then {@link SemaphoreMetrics#monitor} the
         * primitive and {@link SemaphoreMetrics#bindTo} a registry.
         *
         * @return new metrics, monitoring nothing yet
         */
        public SemaphoreMetrics build() {
            return new SemaphoreMetrics(this);
        }
    }
}
