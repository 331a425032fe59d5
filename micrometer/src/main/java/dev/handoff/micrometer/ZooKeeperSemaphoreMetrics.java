// SPDX-License-Identifier: Apache-2.0
package dev.handoff.micrometer;

import dev.handoff.zookeeper.Lease;
import dev.handoff.zookeeper.ZooKeeperListener;
import dev.handoff.zookeeper.ZooKeeperSemaphore;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.FunctionCounter;
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
import java.util.function.ToDoubleFunction;
import org.apache.curator.framework.state.ConnectionState;
import org.jspecify.annotations.Nullable;

/**
 * Micrometer metrics for one {@link ZooKeeperSemaphore} object: its {@link ZooKeeperListener} (it
 * times every grant and counts lost leases, connection changes and failing reads) and a
 * {@link MeterBinder} (its gauges read the semaphore). One call wires it:
 *
 * <pre>{@code
 * ZooKeeperSemaphore budget = new ZooKeeperSemaphore(curator, "/budgets/downstream-mib", 64);
 * ZooKeeperSemaphoreMetrics.monitor(registry, budget);
 * }</pre>
 *
 * <p>or, with a base unit, tags or a prefix, three:
 *
 * <pre>{@code
 * ZooKeeperSemaphoreMetrics.builder()
 *         .baseUnit("mebibytes")
 *         .tags("service", "ingest")
 *         .build()
 *         .monitor(budget)          // adds the metrics as the semaphore's listener
 *         .bindTo(registry);        // registers the meters
 * }</pre>
 *
 * <p><b>Meters</b> (default prefix {@value #DEFAULT_PREFIX}; every meter has the tag
 * {@value #PATH_TAG}, the semaphore's path, and the builder's tags). They describe this object,
 * that is this JVM's use of the shared semaphore, except the capacity and the cluster queue:
 * <table>
 * <caption>The meters of a ZooKeeper semaphore</caption>
 * <tr><th>name</th><th>type</th><th>unit</th><th>what</th></tr>
 * <tr><td>{@code handoff.zookeeper.capacity}</td><td>gauge</td><td>base unit</td><td>{@link ZooKeeperSemaphore#capacity()}, shared by every client</td></tr>
 * <tr><td>{@code handoff.zookeeper.leases}</td><td>gauge</td><td></td><td>{@link ZooKeeperSemaphore#leaseCount()}: the leases held here</td></tr>
 * <tr><td>{@code handoff.zookeeper.held}</td><td>gauge</td><td>base unit</td><td>{@link ZooKeeperSemaphore#heldPermits()}: their permits</td></tr>
 * <tr><td>{@code handoff.zookeeper.queue.length}</td><td>gauge</td><td></td><td>{@link ZooKeeperSemaphore#queueLength()}: the requests waiting here</td></tr>
 * <tr><td>{@code handoff.zookeeper.queue.permits}</td><td>gauge</td><td>base unit</td><td>{@link ZooKeeperSemaphore#queuedPermits()}: the permits they wait for</td></tr>
 * <tr><td>{@code handoff.zookeeper.cluster.queue.length}</td><td>gauge</td><td></td><td>{@link ZooKeeperSemaphore#clusterQueueLength()}: every client's requests, granted and waiting, at the last read ({@code NaN} before one)</td></tr>
 * <tr><td>{@code handoff.zookeeper.connected}</td><td>gauge</td><td></td><td>1 while {@link ZooKeeperSemaphore#isConnected()}, else 0 (then no lease here is valid)</td></tr>
 * <tr><td>{@code handoff.zookeeper.wait}</td><td>timer</td><td>time</td><td>one record per grant: from the call that asked to the grant</td></tr>
 * <tr><td>{@code handoff.zookeeper.leases.lost}</td><td>counter</td><td></td><td>leases lost while held: session lost, node deleted, local deadline passed</td></tr>
 * <tr><td>{@code handoff.zookeeper.connection.changes}</td><td>counter, tag {@value #STATE_TAG}</td><td></td><td>the Curator client's state changes: {@code connected}, {@code suspended}, {@code reconnected}, {@code lost}, {@code read_only}</td></tr>
 * <tr><td>{@code handoff.zookeeper.reads.failing}</td><td>counter</td><td></td><td>runs of failing reads of the cluster queue (and changes of their error), not each retry</td></tr>
 * <tr><td>{@code handoff.zookeeper.alarms}</td><td>function counter</td><td></td><td>{@link ZooKeeperSemaphore#alarmCount()}: children that stopped granting</td></tr>
 * </table>
 *
 * <p>The timer and the counters count what happens after {@link #bindTo}; the counters of every
 * state are registered at once, so they read zero until something happens. A lease lost and a
 * read failing are also logged by the semaphore itself; these meters are for dashboards and
 * alerts (for example on {@code leases.lost}, or on {@code connected} at 0 for longer than a
 * session timeout).
 *
 * <p><b>Keep a strong reference to the semaphore.</b> Like every Micrometer gauge, these hold the
 * semaphore weakly: a semaphore that nothing else references is collected, and its gauges then
 * read {@code NaN}.
 *
 * <p><b>One semaphore each.</b> A {@code ZooKeeperSemaphoreMetrics} observes exactly one
 * {@code ZooKeeperSemaphore} object: {@link #monitor(ZooKeeperSemaphore)} adds it as that object's
 * listener, and refuses a second one. Give each semaphore of one registry its own path (or tags):
 * Micrometer keeps the first gauge registered under a name and tags.
 *
 * <p>Thread-safe. The listener methods take no lock, and run on the threads that
 * {@link ZooKeeperListener} names.
 */
public final class ZooKeeperSemaphoreMetrics implements ZooKeeperListener, MeterBinder {

    /** The default prefix of every meter name: {@value}. */
    public static final String DEFAULT_PREFIX = "handoff.zookeeper";

    /** The default base unit of the meters that count permits: {@value}. */
    public static final String DEFAULT_BASE_UNIT = "permits";

    /** The tag naming the semaphore's path: {@value}. */
    public static final String PATH_TAG = "path";

    /** The tag of the connection counter naming the state the client changed to: {@value}. */
    public static final String STATE_TAG = "state";

    private static final ConnectionState[] STATES = ConnectionState.values();

    private final String prefix;
    private final String baseUnit;
    /** The builder's tags, without {@value #PATH_TAG}. */
    private final Tags tags;

    /** The monitored semaphore: set once by {@link #monitor}, under {@code this}; read under {@code this}. */
    private @Nullable ZooKeeperSemaphore semaphore;

    /**
     * The meters of every registry bound so far: replaced (copy on write) under {@code this}, read
     * without a lock by the listener methods.
     */
    private volatile Meters[] bound = new Meters[0];

    private ZooKeeperSemaphoreMetrics(Builder b) {
        this.prefix = b.prefix;
        this.baseUnit = b.baseUnit;
        this.tags = Tags.of(b.tags);
    }

    /**
     * Starts metrics with options: set the prefix, the base unit and the tags, then
     * {@link Builder#build()}, {@link #monitor(ZooKeeperSemaphore)} and {@link #bindTo}.
     *
     * @return a builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * The one-call wiring: new metrics with the default prefix and base unit, added as the
     * semaphore's listener, their meters registered in {@code registry}.
     *
     * <pre>{@code
     * ZooKeeperSemaphoreMetrics.monitor(registry, budget);
     * }</pre>
     *
     * @param registry  the registry of the meters
     * @param semaphore the semaphore to observe
     * @return the metrics, to bind them to another registry as well
     * @throws NullPointerException if {@code registry} or {@code semaphore} is null (nothing is
     *                              registered)
     */
    public static ZooKeeperSemaphoreMetrics monitor(MeterRegistry registry, ZooKeeperSemaphore semaphore) {
        if (registry == null) {
            throw new NullPointerException("monitor(null, " + semaphore + "): the registry is null");
        }
        if (semaphore == null) {
            throw new NullPointerException("monitor(" + registry + ", null): the semaphore is null");
        }
        ZooKeeperSemaphoreMetrics metrics = builder().build().monitor(semaphore);
        metrics.bindTo(registry);
        return metrics;
    }

    /**
     * Sets the semaphore that the gauges read and adds this as its
     * {@linkplain ZooKeeperSemaphore#addListener(ZooKeeperListener) listener}. Calling it again
     * with the same semaphore does nothing.
     *
     * @param semaphore the semaphore to observe
     * @return this, to call {@link #bindTo} next
     * @throws NullPointerException  if {@code semaphore} is null
     * @throws IllegalStateException if another semaphore is monitored already
     */
    public synchronized ZooKeeperSemaphoreMetrics monitor(ZooKeeperSemaphore semaphore) {
        if (semaphore == null) {
            throw new NullPointerException("monitor(null): the semaphore is null (" + this + ")");
        }
        if (this.semaphore == semaphore) {
            return this;
        }
        if (this.semaphore != null) {
            throw new IllegalStateException(
                    "monitor(" + semaphore + "): " + this + " already monitors " + this.semaphore
                            + "; one ZooKeeperSemaphoreMetrics observes one semaphore, make another for this one");
        }
        this.semaphore = semaphore;
        semaphore.addListener(this);
        return this;
    }

    /**
     * Registers the meters in {@code registry}: the gauges of the semaphore given to
     * {@link #monitor(ZooKeeperSemaphore)}, the wait timer and the counters. Binding to several
     * registries records every event in each; binding to the same one again adds nothing.
     *
     * @param registry the registry
     * @throws NullPointerException  if {@code registry} is null
     * @throws IllegalStateException if no semaphore is monitored yet
     */
    @Override
    public synchronized void bindTo(MeterRegistry registry) {
        if (registry == null) {
            throw new NullPointerException("bindTo(null): the registry is null (" + this + ")");
        }
        ZooKeeperSemaphore s = semaphore;
        if (s == null) {
            throw new IllegalStateException(
                    "bindTo(" + registry + "): " + this + " monitors no semaphore yet; call monitor(semaphore) first");
        }
        for (Meters m : bound) {
            if (m.registry == registry) {
                return;
            }
        }
        Tags all = tags.and(PATH_TAG, s.path());
        gauge(
                registry,
                "capacity",
                "the permits shared by every client of the path",
                baseUnit,
                all,
                s,
                ZooKeeperSemaphore::capacity);
        gauge(registry, "leases", "the leases held through this object", null, all, s, ZooKeeperSemaphore::leaseCount);
        gauge(
                registry,
                "held",
                "the permits of the leases held through this object",
                baseUnit,
                all,
                s,
                ZooKeeperSemaphore::heldPermits);
        gauge(
                registry,
                "queue.length",
                "the requests of this object waiting",
                null,
                all,
                s,
                ZooKeeperSemaphore::queueLength);
        gauge(
                registry,
                "queue.permits",
                "the permits this object's waiting requests ask for",
                baseUnit,
                all,
                s,
                ZooKeeperSemaphore::queuedPermits);
        gauge(
                registry,
                "cluster.queue.length",
                "every client's requests, granted and waiting, at this object's last read",
                null,
                all,
                s,
                z -> z.clusterQueueLength() < 0 ? Double.NaN : z.clusterQueueLength());
        gauge(
                registry,
                "connected",
                "1 while this object's client is connected, else 0",
                null,
                all,
                s,
                z -> z.isConnected() ? 1 : 0);
        FunctionCounter.builder(prefix + ".alarms", s, ZooKeeperSemaphore::alarmCount)
                .description("children of the path that stopped granting")
                .tags(all)
                .register(registry);
        Timer wait = Timer.builder(prefix + ".wait")
                .description("from the call that asked to the grant, one record per grant")
                .tags(all)
                .register(registry);
        Counter lost = Counter.builder(prefix + ".leases.lost")
                .description("leases lost while held: session lost, node deleted, local deadline passed")
                .tags(all)
                .register(registry);
        Counter[] changes = new Counter[STATES.length];
        for (ConnectionState state : STATES) {
            changes[state.ordinal()] = Counter.builder(prefix + ".connection.changes")
                    .description("the Curator client's connection state changes")
                    .tags(all.and(STATE_TAG, stateTag(state)))
                    .register(registry);
        }
        Counter failing = Counter.builder(prefix + ".reads.failing")
                .description("runs of failing reads of the cluster queue, and changes of their error")
                .tags(all)
                .register(registry);
        Meters[] next = Arrays.copyOf(bound, bound.length + 1);
        next[bound.length] = new Meters(registry, wait, lost, changes, failing);
        bound = next;
    }

    private void gauge(
            MeterRegistry registry,
            String name,
            String description,
            @Nullable String unit,
            Tags all,
            ZooKeeperSemaphore s,
            ToDoubleFunction<ZooKeeperSemaphore> value) {
        Gauge.builder(prefix + "." + name, s, value)
                .description(description)
                .baseUnit(unit)
                .tags(all)
                .register(registry);
    }

    /**
     * Counts the change under its state. Called by the semaphore.
     *
     * @param state the new state
     */
    @Override
    public void connectionChanged(ConnectionState state) {
        for (Meters m : bound) {
            m.changes[state.ordinal()].increment();
        }
    }

    /**
     * Counts a lost lease. Called by the semaphore.
     *
     * @param lease  the lease
     * @param reason why it was lost
     */
    @Override
    public void leaseLost(Lease lease, String reason) {
        for (Meters m : bound) {
            m.lost.increment();
        }
    }

    /**
     * Counts a run of failing reads (or a change of its error). Called by the semaphore.
     *
     * @param message  what failed
     * @param attempts the attempts failed so far
     */
    @Override
    public void readsFailing(String message, int attempts) {
        for (Meters m : bound) {
            m.failing.increment();
        }
    }

    /**
     * Records a grant's wait. Called by the semaphore.
     *
     * @param permits     the permits granted
     * @param waitNanos   the wait, in nanoseconds
     * @param queueLength the cluster queue's length at the decision
     */
    @Override
    public void granted(long permits, long waitNanos, int queueLength) {
        for (Meters m : bound) {
            m.wait.record(waitNanos, TimeUnit.NANOSECONDS);
        }
    }

    /**
     * The value of the {@value #STATE_TAG} tag for a connection state: its name in lower case,
     * {@code suspended} for {@link ConnectionState#SUSPENDED}.
     *
     * @param state a state
     * @return its tag value
     * @throws NullPointerException if {@code state} is null
     */
    public static String stateTag(ConnectionState state) {
        return state.name().toLowerCase(Locale.ROOT);
    }

    /**
     * Returns a description for logs.
     *
     * @return for example {@code "ZooKeeperSemaphoreMetrics[/budgets/downstream-mib, handoff.zookeeper, tags [], base unit permits]"}
     */
    @Override
    public synchronized String toString() {
        ZooKeeperSemaphore s = semaphore;
        return "ZooKeeperSemaphoreMetrics[" + (s == null ? "no semaphore yet" : s.path()) + ", " + prefix + ", tags "
                + tags + ", base unit " + baseUnit + "]";
    }

    /** The meters of one registry that the listener methods update. */
    private static final class Meters {
        final MeterRegistry registry;
        final Timer wait;
        final Counter lost;
        final Counter[] changes;
        final Counter failing;

        Meters(MeterRegistry registry, Timer wait, Counter lost, Counter[] changes, Counter failing) {
            this.registry = registry;
            this.wait = wait;
            this.lost = lost;
            this.changes = changes;
            this.failing = failing;
        }
    }

    private static String notBlank(String call, @Nullable String value, String what) {
        return MeterOptions.notBlank(call, value, what);
    }

    /** The options of a {@link ZooKeeperSemaphoreMetrics}, from {@link ZooKeeperSemaphoreMetrics#builder()}. Not thread-safe. */
    public static final class Builder {
        private String prefix = DEFAULT_PREFIX;
        private String baseUnit = DEFAULT_BASE_UNIT;
        private final List<Tag> tags = new ArrayList<>();

        private Builder() {}

        /**
         * Sets the prefix of every meter name instead of {@value #DEFAULT_PREFIX}: with
         * {@code "budget"}, the timer is {@code budget.wait}.
         *
         * @param prefix the prefix, not blank, neither starting nor ending with a dot
         * @return this builder
         * @throws NullPointerException     if {@code prefix} is null
         * @throws IllegalArgumentException if {@code prefix} is blank or starts or ends with a dot
         */
        public Builder prefix(String prefix) {
            this.prefix = MeterOptions.prefix(prefix, "\".wait\", \".capacity\", ...");
            return this;
        }

        /**
         * Sets the base unit of the meters that count permits (capacity, held, queued) instead of
         * {@value #DEFAULT_BASE_UNIT}: for a budget counted in MiB, {@code "mebibytes"}.
         *
         * @param baseUnit the unit, not blank
         * @return this builder
         * @throws NullPointerException     if {@code baseUnit} is null
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
         * @throws NullPointerException     if {@code keyValues} or one of them is null
         * @throws IllegalArgumentException if there is an odd number of them, or a key is
         *                                  {@value #PATH_TAG} or {@value #STATE_TAG} (this class's own tags)
         */
        public Builder tags(String... keyValues) {
            this.tags.addAll(MeterOptions.pairs(keyValues, (key, arguments) -> {
                if (key.equals(PATH_TAG) || key.equals(STATE_TAG)) {
                    throw new IllegalArgumentException(
                            "tags(" + arguments + "): the key \"" + key + "\" is ZooKeeperSemaphoreMetrics' own ("
                                    + PATH_TAG + " is the semaphore's path, " + STATE_TAG
                                    + " tags the connection changes); choose another key");
                }
            }));
            return this;
        }

        /**
         * Builds the metrics: then {@link ZooKeeperSemaphoreMetrics#monitor(ZooKeeperSemaphore)} a
         * semaphore and {@link ZooKeeperSemaphoreMetrics#bindTo} a registry.
         *
         * @return new metrics, monitoring nothing yet
         */
        public ZooKeeperSemaphoreMetrics build() {
            return new ZooKeeperSemaphoreMetrics(this);
        }
    }
}
