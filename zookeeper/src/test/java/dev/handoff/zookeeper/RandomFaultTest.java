// SPDX-License-Identifier: Apache-2.0
package dev.handoff.zookeeper;

import static dev.handoff.zookeeper.Clients.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.test.InstanceSpec;
import org.apache.curator.test.TestingCluster;
import org.apache.zookeeper.KeeperException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A randomized fault test in the manner of Jepsen: three clients, each behind its own freezable
 * proxies to a 3-server ensemble whose servers also reach each other only through proxies
 * ({@link ProxiedEnsemble}), run acquire / release / timeout / cancel storms (one of them through a
 * {@link LocalFront}; some holds last more than twice the session timeout) while a nemesis freezes
 * client links (briefly, or past the session timeout, so that the server expires the session),
 * cuts one server from the others (a follower from the leader, or the leader into a minority) and
 * heals it, kills and restarts the leader, changes the capacity up and down, deletes request
 * nodes by hand, and moves the newest generation's counter to just below the switch (so the
 * semaphore seals it and moves on to the next generation under the other faults). (Sessions are not ended through a second handle here: that deletes the nodes at
 * once, faster than any holder can learn, which no lease can guard against; in production a
 * session ends by its timeout, and HonestLeaseTest and SessionFailureTest cover the rest.) An
 * independent checker, which parses the znodes itself and trusts nothing of the semaphore but what
 * a caller sees, then asserts:
 * <ol>
 *   <li>at no instant do the permits of leases whose holder considers them valid exceed the
 *       capacity in effect (each lease's interval runs from the first to the last
 *       {@code isValid() == true} its holder saw, so recorded intervals lie within the true ones;
 *       a local front's leases count as their block, held from the first to the last of them; a
 *       lease whose node the nemesis deleted counts until the deletion; the capacity allowed is the
 *       largest in effect since the earliest request of the leases counted, a change counting as
 *       both values while its write is in flight);</li>
 *   <li>FIFO by sequence within a generation: in every snapshot of the queue that an observer
 *       client took after a grant was seen (each read preceded by a sync, so that its server is not
 *       behind the leader), the weights of the requests up to and including the
 *       granted one fit the largest capacity (a request granted past an earlier one that did not
 *       fit, or over the capacity, breaks it);</li>
 *   <li>every request ends (granted, timed out, cancelled or failed with a session or connection
 *       error): no worker hangs once the faults have healed, and nothing is left in the queue.</li>
 * </ol>
 * The seed is printed; set {@code -Dhandoff.faultSeed=...} to replay a run's fault schedule.
 */
@Timeout(value = 200, unit = TimeUnit.SECONDS)
class RandomFaultTest {

    private static final long CAPACITY = 3;
    private static final long OTHER_CAPACITY = 4;
    private static final long FRONT_BLOCK = 2;
    private static final int CLIENTS = 3;
    private static final int WORKERS = 3;
    private static final long NEMESIS_MS = 40_000;
    private static final int SESSION_MS = 4_000;
    private static final String PATH = "/handoff-test/faults";

    /** One grant as its holder saw it; weight is what its node holds (a local front's: the block). */
    record Grant(int client, String node, long weight, long token, long requested, long validFrom, long validTo) {}

    /** A capacity write in flight from {@code from} until it was confirmed at {@code to}. */
    record CapacityChange(long from, long to, long before, long after) {}

    /** A queue snapshot by the observer: the read was sent at sentAt. */
    record Snapshot(long sentAt, String generation, List<String> children) {}

    private final ConcurrentLinkedQueue<Grant> grants = new ConcurrentLinkedQueue<>();
    private final ConcurrentLinkedQueue<Snapshot> snapshots = new ConcurrentLinkedQueue<>();
    private final ConcurrentLinkedQueue<Throwable> unexpected = new ConcurrentLinkedQueue<>();
    private final AtomicLong started = new AtomicLong();
    private final AtomicLong ended = new AtomicLong();
    private final AtomicBoolean stop = new AtomicBoolean();
    /** Per client: long holds in progress. */
    private final java.util.concurrent.atomic.AtomicIntegerArray longHolds =
            new java.util.concurrent.atomic.AtomicIntegerArray(CLIENTS);

    private final ConcurrentLinkedQueue<CapacityChange> capacityChanges = new ConcurrentLinkedQueue<>();
    /** Nodes the nemesis deleted, and when (nanoTime, before the delete was sent). */
    private final Map<String, Long> deleted = new java.util.concurrent.ConcurrentHashMap<>();
    /** The nemesis's actions with their nanoTime, for the failure messages. */
    private final ConcurrentLinkedQueue<String> history = new ConcurrentLinkedQueue<>();

    private void log(String event) {
        String line = (System.nanoTime() / 1_000_000) + " ms: " + event;
        history.add(line);
        System.out.println("nemesis: " + line);
    }

    @Test
    void randomFaultsNeverOverAdmitNeverBreakFifoAndEveryRequestEnds() throws Exception {
        long seed = Long.getLong("handoff.faultSeed", System.nanoTime());
        System.out.println(
                "RandomFaultTest seed " + seed + " (-Dhandoff.faultSeed=" + seed + " replays the fault schedule)");
        Random random = new Random(seed);
        try (ProxiedEnsemble ensemble = new ProxiedEnsemble(3, 1_000, 10)) {
            ensemble.start();
            TestingCluster cluster = ensemble.cluster;
            List<InstanceSpec> specs = ensemble.specs;
            List<List<FreezableProxy>> links = new ArrayList<>();
            try (Clients clients = new Clients(cluster.getConnectString())) {
                List<CuratorFramework> curators = new ArrayList<>();
                List<ZooKeeperSemaphore> semaphores = new ArrayList<>();
                for (int c = 0; c < CLIENTS; c++) {
                    List<FreezableProxy> mine = new ArrayList<>();
                    StringBuilder connect = new StringBuilder();
                    for (InstanceSpec spec : specs) {
                        FreezableProxy p = new FreezableProxy(spec.getPort());
                        mine.add(p);
                        connect.append(connect.length() == 0 ? "" : ",").append(p.connectString());
                    }
                    links.add(mine);
                    CuratorFramework curator = clients.start(connect.toString(), SESSION_MS);
                    curators.add(curator);
                    semaphores.add(new ZooKeeperSemaphore(curator, PATH, CAPACITY));
                }
                int sessionMs = curators.get(0).getZookeeperClient().getLastNegotiatedSessionTimeoutMs();
                System.out.println("RandomFaultTest: negotiated session timeout " + sessionMs + " ms");
                CuratorFramework observerClient = clients.start(cluster.getConnectString(), 20_000);
                Thread observer = thread("observer", () -> observe(observerClient));

                List<Thread> workers = new ArrayList<>();
                LocalFront front = semaphores.get(CLIENTS - 1).withLocalFront(FRONT_BLOCK, Duration.ofSeconds(2));
                for (int c = 0; c < CLIENTS; c++) {
                    for (int w = 0; w < WORKERS; w++) {
                        int client = c;
                        ZooKeeperSemaphore s = semaphores.get(c);
                        LocalFront f = c == CLIENTS - 1 ? front : null;
                        workers.add(thread("worker-" + c + "-" + w, () -> work(client, s, f, sessionMs)));
                    }
                }
                long capacityNow = CAPACITY;

                long nemesisEnd = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(NEMESIS_MS);
                int faults = 0;
                while (System.nanoTime() < nemesisEnd) {
                    Thread.sleep(500 + random.nextInt(1500));
                    int kind = random.nextInt(8);
                    int victim = random.nextInt(CLIENTS);
                    faults++;
                    if (kind == 0 || kind == 1) {
                        // kind 0: a short freeze (the client is suspended, its session survives);
                        // kind 1: a freeze past the session timeout: the server expires the session, as
                        // it does in production after a partition or a long pause.
                        long ms = kind == 0 ? 300 + random.nextInt(2_000) : sessionMs + 500 + random.nextInt(2_000);
                        log("freeze client " + victim + " for " + ms + " ms"
                                + (kind == 1 ? " (its session expires)" : ""));
                        links.get(victim).forEach(FreezableProxy::freeze);
                        Thread.sleep(ms);
                        links.get(victim).forEach(FreezableProxy::thaw);
                        log("thaw client " + victim);
                    } else if (kind == 2) {
                        InstanceSpec leader = Clients.leader(specs);
                        if (leader != null) {
                            log("kill the leader " + leader.getPort());
                            cluster.killServer(leader);
                            Thread.sleep(1_000 + random.nextInt(2_000));
                            cluster.restartServer(leader);
                            log("restart " + leader.getPort());
                        }
                    } else if (kind == 3) {
                        // A server cut from the other two: a follower from the leader (it answers its
                        // clients from its own copy until syncLimit ticks pass), or the leader into a minority.
                        int server = random.nextInt(specs.size());
                        long ms = 2_000 + random.nextInt(6_000);
                        int holder = longHolder(random);
                        if (holder >= 0 && random.nextInt(4) != 0) {
                            // Targeted: the server that a client holding a long lease is connected to, for
                            // longer than the session timeout: the leader expires the holder while that
                            // server, if a follower, goes on answering it until syncLimit ticks pass.
                            for (int i = 0; i < specs.size(); i++) {
                                if (links.get(holder).get(i).connected()) {
                                    server = i;
                                }
                            }
                            ms = sessionMs + 1_000 + random.nextInt(3_000);
                        }
                        log("isolate server " + specs.get(server).getPort()
                                + (server == ensemble.leader() ? " (the leader)" : "") + " for " + ms + " ms");
                        ensemble.isolate(server);
                        Thread.sleep(ms);
                        ensemble.heal();
                        log("heal the servers");
                    } else if (kind == 4) {
                        long next = capacityNow == CAPACITY ? OTHER_CAPACITY : CAPACITY;
                        long from = System.nanoTime();
                        if (writeCapacity(observerClient, next)) {
                            capacityChanges.add(new CapacityChange(from, System.nanoTime(), capacityNow, next));
                            log("capacity " + capacityNow + " -> " + next);
                            capacityNow = next;
                        } else {
                            capacityChanges.add(new CapacityChange(from, Long.MAX_VALUE, capacityNow, next));
                            log("capacity " + capacityNow + " -> " + next + " not confirmed: both count from now on");
                            capacityNow = Math.max(capacityNow, next);
                        }
                    } else if (kind == 5) {
                        String victimNode = deleteARequest(observerClient, random);
                        log(victimNode == null ? "nothing to delete" : "delete " + victimNode);
                    } else if (kind == 6) {
                        // The newest generation's counter moved to just below the switch, as after a
                        // billion requests: the next creates seal it and start the next generation.
                        // Under load the leader names children after its pending changes rather than its
                        // tree, so the value is set again until a name shows it (or the switch happened).
                        String newest = newestGeneration(observerClient);
                        boolean took = false;
                        int servers = 0;
                        for (int attempt = 0; newest != null && attempt < 100 && !took; attempt++) {
                            servers = ServerInternals.setCversion(
                                    cluster, PATH + "/" + newest, (int) ZooKeeperSemaphore.SWITCH_AT_SEQUENCE - 3);
                            Thread.sleep(20);
                            took = !newest.equals(newestGeneration(observerClient))
                                    || maxSequence(observerClient, newest) >= ZooKeeperSemaphore.SWITCH_AT_SEQUENCE - 3;
                        }
                        log(
                                newest == null
                                        ? "no generation to push"
                                        : "counter of " + newest + (took ? " set" : " not set")
                                                + " near the switch (on " + servers + " servers)");
                    } else {
                        log("quiet");
                    }
                }
                links.forEach(l -> l.forEach(FreezableProxy::thaw));
                ensemble.heal();
                long grantsAtCalm = grants.size();
                await("grants resume after the faults", () -> grants.size() > grantsAtCalm + 20, 60_000);
                stop.set(true);
                for (Thread w : workers) {
                    w.join(60_000); // a hold lasts 2.5 session timeouts at most
                    assertFalse(w.isAlive(), "a worker hangs: " + w.getName());
                }
                observer.join(10_000);
                System.out.printf(
                        "RandomFaultTest: %d faults, %d requests, %d grants (%d held over 2x the session timeout), "
                                + "%d snapshots, %d nodes deleted, %d capacity changes, generations granted in: %s%n",
                        faults,
                        started.get(),
                        grants.size(),
                        grants.stream()
                                .filter(g ->
                                        g.validTo() - g.validFrom() > TimeUnit.MILLISECONDS.toNanos(2L * sessionMs))
                                .count(),
                        snapshots.size(),
                        deleted.size(),
                        capacityChanges.size(),
                        grants.stream()
                                .map(g -> g.node()
                                        .substring(PATH.length() + 1, g.node().lastIndexOf('/')))
                                .distinct()
                                .sorted()
                                .toList());
                assertTrue(unexpected.isEmpty(), () -> "unexpected failures: " + unexpected);
                assertEquals(started.get(), ended.get(), "every request ends");
                checkCapacity();
                checkPrefixes();
                await(
                        "nothing left in the queue",
                        () -> Clients.children(observerClient, PATH).isEmpty(),
                        60_000);
            } finally {
                stop.set(true); // whatever failed, the workers and the observer end (daemon threads)
                for (List<FreezableProxy> l : links) {
                    for (FreezableProxy p : l) {
                        p.close();
                    }
                }
            }
        }
    }

    private void work(int client, ZooKeeperSemaphore s, LocalFront front, int sessionMs) {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        while (!stop.get()) {
            long n = 1 + random.nextInt(2);
            started.incrementAndGet();
            long requested = System.nanoTime();
            try {
                Lease lease;
                if (random.nextInt(4) == 0) { // cancel after a short while
                    CompletableFuture<Lease> f = front != null ? front.acquireAsync(n) : s.acquireAsync(n);
                    Thread.sleep(random.nextInt(30));
                    if (f.cancel(false)) {
                        ended.incrementAndGet();
                        continue;
                    }
                    lease = ZooKeeperSemaphore.awaitLease(f);
                } else {
                    Duration timeout = Duration.ofMillis(random.nextInt(3) == 0 ? 0 : 50 + random.nextInt(2_000));
                    Optional<Lease> got =
                            front != null ? front.tryAcquireBlocking(n, timeout) : s.tryAcquireBlocking(n, timeout);
                    if (got.isEmpty()) {
                        ended.incrementAndGet();
                        continue;
                    }
                    lease = got.get();
                }
                ended.incrementAndGet();
                // One hold in thirty lasts more than twice the session timeout: across several heartbeats,
                // and across any expiry the nemesis causes meanwhile.
                long holdMs = random.nextInt(30) == 0
                        ? sessionMs * 22L / 10 + random.nextInt(sessionMs / 4)
                        : random.nextInt(20);
                hold(client, lease, front != null ? FRONT_BLOCK : lease.permits(), requested, holdMs);
            } catch (InterruptedException e) {
                ended.incrementAndGet();
                return;
            } catch (RuntimeException e) {
                ended.incrementAndGet();
                if (!(e instanceof SessionLostException) && !isKeeper(e)) {
                    unexpected.add(e); // a session or connection error is expected under faults; nothing else
                }
                sleepQuietly(20); // the client is reconnecting
            }
        }
    }

    /** Curator's failures reach the future as KeeperException (checked), wrapped by awaitLease. */
    private static boolean isKeeper(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof KeeperException) {
                return true;
            }
        }
        return false;
    }

    /** A client with a long hold in progress, or -1. */
    private int longHolder(Random random) {
        int start = random.nextInt(CLIENTS);
        for (int i = 0; i < CLIENTS; i++) {
            int c = (start + i) % CLIENTS;
            if (longHolds.get(c) > 0) {
                return c;
            }
        }
        return -1;
    }

    private void hold(int client, Lease lease, long weight, long requested, long holdMs) throws InterruptedException {
        boolean longHold = holdMs > 100;
        if (longHold) {
            longHolds.incrementAndGet(client);
        }
        try {
            if (!lease.isValid()) {
                return;
            }
            long from = System.nanoTime(); // valid at some point before this: count from the later end
            long to = from;
            long until = from + TimeUnit.MILLISECONDS.toNanos(holdMs);
            while (System.nanoTime() < until) {
                Thread.sleep(holdMs > 100 ? 20 : 2);
                long t = System.nanoTime();
                if (!lease.isValid()) {
                    break; // the holder stops working on it
                }
                to = t; // valid at some point after t: count up to the earlier end
            }
            grants.add(new Grant(client, lease.node(), weight, lease.fencingToken(), requested, from, to));
        } finally {
            if (longHold) {
                longHolds.decrementAndGet(client);
            }
            lease.close();
        }
    }

    /** Writes the capacity as an operator would (a versioned setData), retrying; false if it could not be confirmed. */
    private static boolean writeCapacity(CuratorFramework c, long capacity) {
        for (int attempt = 0; attempt < 20; attempt++) {
            try {
                org.apache.zookeeper.data.Stat stat = new org.apache.zookeeper.data.Stat();
                byte[] data = c.getData().storingStatIn(stat).forPath(PATH);
                if (new String(data, java.nio.charset.StandardCharsets.US_ASCII)
                        .trim()
                        .equals(Long.toString(capacity))) {
                    return true; // an earlier attempt landed
                }
                c.setData()
                        .withVersion(stat.getVersion())
                        .forPath(PATH, Long.toString(capacity).getBytes(java.nio.charset.StandardCharsets.US_ASCII));
                return true;
            } catch (Exception e) {
                sleepQuietly(200); // an election, a lost connection, or a race with ourselves: read again
            }
        }
        return false;
    }

    /** The largest sequence among the generation's children now, or -1. */
    private static long maxSequence(CuratorFramework c, String generation) {
        long max = -1;
        try {
            for (String child : c.getChildren().forPath(PATH + "/" + generation)) {
                int dash = child.lastIndexOf('-');
                try {
                    max = Math.max(max, Long.parseLong(child.substring(dash + 1)));
                } catch (NumberFormatException notASequence) {
                    // a protected-mode prefix only
                }
            }
        } catch (Exception e) {
            // gone or unreachable: -1
        }
        return max;
    }

    /** The newest generation's name, or null if it cannot be read now. */
    private static String newestGeneration(CuratorFramework c) {
        try {
            String newest = null;
            for (String child : c.getChildren().forPath(PATH)) {
                if (child.startsWith(ZooKeeperSemaphore.GENERATION_PREFIX)
                        && (newest == null || child.compareTo(newest) > 0)) {
                    newest = child;
                }
            }
            return newest;
        } catch (Exception e) {
            return null;
        }
    }

    /** Deletes one request node, granted or waiting, as a cleanup script would; returns it, or null. */
    private String deleteARequest(CuratorFramework c, Random random) {
        try {
            List<String> nodes = new ArrayList<>();
            for (String generation : c.getChildren().forPath(PATH)) {
                if (generation.startsWith(ZooKeeperSemaphore.GENERATION_PREFIX)) {
                    for (String child : c.getChildren().forPath(PATH + "/" + generation)) {
                        if (parseIndependently(child) != null) {
                            nodes.add(PATH + "/" + generation + "/" + child);
                        }
                    }
                }
            }
            if (nodes.isEmpty()) {
                return null;
            }
            String victim = nodes.get(random.nextInt(nodes.size()));
            deleted.put(victim, System.nanoTime());
            c.delete().forPath(victim);
            return victim;
        } catch (Exception e) {
            return null; // gone already, or the ensemble is electing
        }
    }

    private void observe(CuratorFramework c) {
        while (!stop.get()) {
            try {
                for (String generation : c.getChildren().forPath(PATH)) {
                    if (!generation.startsWith(ZooKeeperSemaphore.GENERATION_PREFIX)) {
                        continue;
                    }
                    long sentAt = System.nanoTime();
                    // A server may lag behind the leader, and a lagging server still lists nodes that
                    // were deleted before a grant: sync first, so that the read reflects every write
                    // committed before sentAt (a grant seen before sentAt included).
                    sync(c, PATH + "/" + generation);
                    List<String> children = c.getChildren().forPath(PATH + "/" + generation);
                    snapshots.add(new Snapshot(sentAt, generation, children));
                }
                Thread.sleep(20);
            } catch (InterruptedException e) {
                return;
            } catch (Exception e) {
                sleepQuietly(50); // the ensemble is electing a leader
            }
        }
    }

    /** Waits until this client's server has caught up with the leader as of now (Curator syncs in the background only). */
    private static void sync(CuratorFramework c, String path) throws Exception {
        CompletableFuture<Integer> done = new CompletableFuture<>();
        c.sync()
                .inBackground((client, event) -> done.complete(event.getResultCode()))
                .forPath(path);
        int rc = done.get(10, TimeUnit.SECONDS);
        if (rc != 0) {
            throw KeeperException.create(KeeperException.Code.get(rc), path);
        }
    }

    /** One node's time as valid, as the holders saw it: a local front's leases merged into their block. */
    private record Held(String node, long weight, long requested, long from, long to) {}

    /**
     * The largest capacity that may have been in effect at some instant of [lo, hi]: the one in
     * effect at lo, and both values of every change whose write was in flight during [lo, hi]
     * (the nemesis makes one change at a time).
     */
    private long capacityAllowed(long lo, long hi) {
        long atLo = CAPACITY;
        long allowed = 0;
        for (CapacityChange c : capacityChanges) {
            if (c.to() < lo) {
                atLo = c.after(); // changes are sequential: the last confirmed before lo wins
            }
        }
        List<CapacityChange> sorted = new ArrayList<>(capacityChanges);
        sorted.sort((x, y) -> Long.compare(x.from(), y.from()));
        for (CapacityChange c : sorted) {
            if (c.to() < lo) {
                atLo = c.after();
            }
            if (c.from() <= hi && c.to() >= lo) {
                allowed = Math.max(allowed, Math.max(c.before(), c.after()));
            }
        }
        return Math.max(allowed, atLo);
    }

    /** 1. At no instant do the permits of leases seen valid exceed the capacity in effect. */
    private void checkCapacity() {
        Map<String, Held> byNode = new HashMap<>();
        for (Grant g : grants) {
            long to = Math.min(g.validTo(), deleted.getOrDefault(g.node(), Long.MAX_VALUE));
            if (to < g.validFrom()) {
                continue;
            }
            byNode.merge(
                    g.node(),
                    new Held(g.node(), g.weight(), g.requested(), g.validFrom(), to),
                    (x, y) -> new Held(
                            x.node(),
                            x.weight(),
                            Math.min(x.requested(), y.requested()),
                            Math.min(x.from(), y.from()),
                            Math.max(x.to(), y.to())));
        }
        List<Held> held = new ArrayList<>(byNode.values());
        held.sort((x, y) -> Long.compare(x.from(), y.from()));
        long peak = 0;
        for (Held h : held) {
            long at = h.from();
            long inUse = 0;
            long earliest = at;
            List<Held> overlapping = new ArrayList<>();
            for (Held o : held) {
                if (o.from() <= at && at <= o.to()) { // closed intervals
                    inUse += o.weight();
                    earliest = Math.min(earliest, o.requested());
                    overlapping.add(o);
                }
            }
            peak = Math.max(peak, inUse);
            long allowed = capacityAllowed(earliest, at);
            if (inUse > allowed) {
                StringBuilder b = new StringBuilder();
                for (Held o : overlapping) {
                    b.append("\n  ")
                            .append(o)
                            .append(" from ")
                            .append(o.from() / 1_000_000)
                            .append(" ms to ")
                            .append(o.to() / 1_000_000)
                            .append(" ms");
                }
                fail("over-admission: " + inUse + " permits of leases seen valid at once at " + at / 1_000_000
                        + " ms, capacity at most " + allowed + " since " + earliest / 1_000_000 + " ms:" + b
                        + "\ncapacity changes: " + capacityChanges + "\nnemesis:\n  " + String.join("\n  ", history));
            }
        }
        System.out.println("RandomFaultTest: peak permits of valid leases " + peak + " (capacity " + CAPACITY + " or "
                + OTHER_CAPACITY + ")");
    }

    /** 2. In each later snapshot of its generation, a granted request's prefix fits the capacity. */
    private void checkPrefixes() {
        Map<String, Grant> byName = new HashMap<>();
        for (Grant g : grants) {
            byName.put(g.node().substring(g.node().lastIndexOf('/') + 1), g);
        }
        int checked = 0;
        for (Snapshot s : snapshots) {
            List<long[]> requests = new ArrayList<>(); // {sequence, weight, index}
            List<String> names = new ArrayList<>();
            for (String child : s.children()) {
                long[] parsed = parseIndependently(child);
                if (parsed != null) {
                    requests.add(new long[] {parsed[1], parsed[0], names.size()});
                    names.add(child);
                }
            }
            requests.sort((a, b) -> Long.compare(a[0], b[0]));
            long prefix = 0;
            for (long[] r : requests) {
                prefix += r[1];
                Grant g = byName.get(names.get((int) r[2]));
                if (g != null && g.validFrom() < s.sentAt() && g.node().contains("/" + s.generation() + "/")) {
                    checked++;
                    if (prefix > OTHER_CAPACITY) {
                        fail("FIFO or capacity broken in " + s.generation() + ": " + names.get((int) r[2])
                                + " was granted, yet the requests up to it weigh " + prefix + " > " + OTHER_CAPACITY
                                + " in " + s.children());
                    }
                }
            }
        }
        System.out.println("RandomFaultTest: " + checked + " granted requests checked against later snapshots");
        assertTrue(checked > 0, "the observer saw granted requests");
    }

    /** The checker's own parse of a request name (…req-w&lt;19 digits&gt;-&lt;10 digits&gt;), independent of the semaphore's. */
    private static long[] parseIndependently(String name) {
        int at = name.lastIndexOf("req-w");
        if (at < 0 || name.length() != at + 5 + 19 + 1 + 10 || name.charAt(at + 5 + 19) != '-') {
            return null;
        }
        return new long[] {Long.parseLong(name.substring(at + 5, at + 24)), Long.parseLong(name.substring(at + 25))};
    }

    private static Thread thread(String name, Runnable r) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        t.start();
        return t;
    }

    private static void sleepQuietly(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
