// SPDX-License-Identifier: Apache-2.0
package dev.handoff.zookeeper;

import static dev.handoff.zookeeper.Clients.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
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
 * heals it, kills and restarts the leader, slows the links of the clients without a front while it
 * shrinks and grows the capacity again and again, deletes request nodes by hand, and moves the
 * newest generation's counter to just below the switch (so the semaphore seals it and moves on to
 * the next generation under the other faults). The nemesis draws its faults from a deck shuffled
 * by the seed, so that every run meets each kind. Two of them are aimed, through a fourth, lone
 * client that does nothing but hold one permit long when asked to: a cut of the follower it is
 * connected to, for longer than the session timeout (the leader expires the holder and grants its
 * permit to others while that follower goes on answering the holder from its own copy), and a
 * deletion of its node by hand soon after its hold started. (Sessions are not ended through a
 * second handle here: that deletes the nodes at once, faster than any holder can learn, which no
 * lease can guard against; in production a session ends by its timeout, and HonestLeaseTest and
 * SessionFailureTest cover the rest.) An independent checker, which parses the znodes itself and
 * trusts nothing of the semaphore but what a caller sees, then asserts:
 * <ol>
 *   <li>at no instant do the permits of leases whose holder considers them valid exceed the
 *       capacity in effect (each lease's interval runs from the first to the last
 *       {@code isValid() == true} its holder saw, so recorded intervals lie within the true ones;
 *       a local front's leases count as their block, held from the first to the last of them; a
 *       lease whose node the nemesis deleted counts until the deletion; the capacity allowed is the
 *       largest in effect since the earliest request of the leases counted, a change counting as
 *       both values while its write is in flight);</li>
 *   <li>every grant fits at some instant of its decision: between its request and the first time
 *       its holder saw it valid, there is an instant at which it fits, together with the leases
 *       ahead of it in the queue seen valid across that instant, the capacity in effect then
 *       (property 1 allows for a shrink's debt; this one does not let a grant decided after a
 *       shrink use the old capacity);</li>
 *   <li>a lease whose node the nemesis deleted is not seen valid more than a session timeout after
 *       the deletion;</li>
 *   <li>FIFO by sequence within a generation: in every snapshot of the queue that an observer
 *       client took after a grant was seen (each read preceded by a sync, so that its server is not
 *       behind the leader), the weights of the requests up to and including the
 *       granted one fit the largest capacity (a request granted past an earlier one that did not
 *       fit, or over the capacity, breaks it);</li>
 *   <li>every request ends (granted, timed out, cancelled or failed with a session or connection
 *       error): no worker hangs once the faults have healed, and nothing is left in the queue.</li>
 * </ol>
 * The seed is printed; set {@code -Dhandoff.faultSeed=...} to replay a run's fault schedule (the
 * workers' own choices are not replayed), and {@code -Dhandoff.faultDump=true} to print every grant
 * the checker saw.
 */
@Timeout(value = 200, unit = TimeUnit.SECONDS)
class RandomFaultTest {

    private static final long CAPACITY = 3;
    private static final long OTHER_CAPACITY = 4;
    private static final long FRONT_BLOCK = 2;
    private static final int CLIENTS = 3;
    /** The client that the nemesis makes hold one permit, and nothing else, when it aims a fault at a holder. */
    private static final int LONE = CLIENTS;

    private static final int WORKERS = 3;
    private static final long NEMESIS_MS = 40_000;
    /** The kinds of fault the nemesis draws from: see the nemesis loop. */
    private static final int KINDS = 9;

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
    /** The lone client's holder threads. */
    private final ConcurrentLinkedQueue<Thread> loneHolders = new ConcurrentLinkedQueue<>();
    /** The session timeout the servers granted, in ms. */
    private volatile int sessionMs;

    private final ConcurrentLinkedQueue<CapacityChange> capacityChanges = new ConcurrentLinkedQueue<>();
    /** Nodes the nemesis deleted, and when (nanoTime, before the delete was sent). */
    private final Map<String, Long> deleted = new ConcurrentHashMap<>();
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
                for (int c = 0; c <= LONE; c++) {
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
                sessionMs = curators.get(0).getZookeeperClient().getLastNegotiatedSessionTimeoutMs();
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
                        workers.add(thread("worker-" + c + "-" + w, () -> work(client, s, f)));
                    }
                }
                long capacityNow = CAPACITY;

                long nemesisEnd = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(NEMESIS_MS);
                int faults = 0;
                List<Integer> deck = new ArrayList<>();
                Set<Integer> retried = new HashSet<>(); // the aimed faults drawn again in this round
                while (System.nanoTime() < nemesisEnd) {
                    Thread.sleep(200 + random.nextInt(800));
                    if (deck.isEmpty()) {
                        // Every kind of fault once per round, in an order of the seed's: each run meets each one.
                        for (int k = 0; k < KINDS; k++) {
                            deck.add(k);
                        }
                        Collections.shuffle(deck, random);
                        retried.clear();
                    }
                    int kind = deck.remove(deck.size() - 1);
                    int victim = random.nextInt(CLIENTS);
                    boolean missed = false; // an aimed fault found nothing to aim at
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
                            ensemble.restart(leader);
                            log("restart " + leader.getPort());
                        }
                    } else if (kind == 3) {
                        // Aimed: the lone client, connected to a follower, takes one permit and holds it long;
                        // its server is then cut from the other two for longer than the session timeout (but
                        // less than syncLimit ticks): the leader expires the holder and grants its permit to
                        // others while that follower goes on answering the holder's reads and pings from its
                        // own copy (the lone client sends no write that would stall them).
                        int server = loneOnAFollower(curators.get(LONE), links.get(LONE), ensemble.leader());
                        String node = server < 0 ? null : startLoneHold(semaphores.get(LONE));
                        if (node != null) {
                            // The grant's own write (the signal to the request behind it) lands first: a write of
                            // the holder's in flight would hold back the follower's answers to it.
                            Thread.sleep(500);
                            server = connectedServer(curators.get(LONE), links.get(LONE));
                        }
                        if (node != null && server >= 0 && server != ensemble.leader()) {
                            long ms = sessionMs + 3_000 + random.nextInt(2_000);
                            log("isolate server " + specs.get(server).getPort()
                                    + ", through which the lone client holds " + node + ", for " + ms + " ms");
                            ensemble.isolate(server);
                            Thread.sleep(ms);
                            ensemble.heal();
                            log("heal the servers");
                        } else {
                            missed = true;
                        }
                    } else if (kind == 4) {
                        // A server cut from the other two at random: a follower from the leader, or the leader
                        // into a minority.
                        int server = random.nextInt(specs.size());
                        long ms = 2_000 + random.nextInt(3_000);
                        log("isolate server " + specs.get(server).getPort()
                                + (server == ensemble.leader() ? " (the leader)" : "") + " for " + ms + " ms");
                        ensemble.isolate(server);
                        Thread.sleep(ms);
                        ensemble.heal();
                        log("heal the servers");
                    } else if (kind == 5) {
                        // The capacity goes down and up again, several times, while the links of the clients
                        // without a front are slow: a shrink then lands between such a client's reads of
                        // the queue, and a release right after it. Each shrink stays long enough for the
                        // grants decided under it to be seen before the capacity grows again.
                        long delay = 60 + random.nextInt(40);
                        log("slow the links of clients 0 to " + (CLIENTS - 2) + " by " + delay + " ms each way");
                        for (int c = 0; c < CLIENTS - 1; c++) {
                            links.get(c).forEach(p -> p.slow(delay));
                        }
                        for (int i = 0; i < 12; i++) {
                            capacityNow = changeCapacity(observerClient, capacityNow);
                            Thread.sleep(
                                    capacityNow < OTHER_CAPACITY
                                            ? 350 + random.nextInt(200)
                                            : 80 + random.nextInt(120));
                        }
                        if (capacityNow != CAPACITY) {
                            capacityNow = changeCapacity(observerClient, capacityNow);
                        }
                        for (int c = 0; c < CLIENTS - 1; c++) {
                            links.get(c).forEach(p -> p.slow(0));
                        }
                        log("links at full speed");
                    } else if (kind == 6) {
                        // Aimed: the lone client takes one permit and holds it long, and its node is deleted
                        // by hand soon after, as a cleanup script would: the holder has long to notice. No
                        // other fault comes for a session timeout, so that none ends the lease first.
                        String node = startLoneHold(semaphores.get(LONE));
                        if (node != null) {
                            Thread.sleep(random.nextInt(sessionMs / 2));
                            log(
                                    deleteNode(observerClient, node)
                                            ? "delete " + node + " (held long by the lone client)"
                                            : "could not delete " + node);
                            Thread.sleep(sessionMs + 500);
                        } else {
                            missed = true;
                        }
                    } else if (kind == 7) {
                        // Any request node, granted or waiting, deleted by hand.
                        String victimNode = deleteARequest(observerClient, random);
                        log(victimNode == null ? "nothing to delete" : "delete " + victimNode);
                    } else {
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
                    }
                    if (missed && retried.add(kind)) {
                        deck.add(0, kind); // once more, at the end of this round
                    }
                }
                links.forEach(l -> l.forEach(FreezableProxy::thaw));
                ensemble.heal();
                long grantsAtCalm = grants.size();
                try {
                    await("grants resume after the faults", () -> grants.size() > grantsAtCalm + 20, 60_000);
                } catch (AssertionError e) {
                    fail(
                            e.getMessage() + states(semaphores, workers) + "\nnemesis:\n  "
                                    + String.join("\n  ", history),
                            e);
                }
                stop.set(true);
                workers.addAll(loneHolders);
                for (Thread w : workers) {
                    w.join(60_000); // a hold ends once stop is set
                    assertFalse(w.isAlive(), "a worker hangs: " + w.getName());
                }
                observer.join(10_000);
                System.out.printf(
                        "RandomFaultTest: %d faults, %d requests, %d grants (%d held over 2x the session timeout), "
                                + "%d snapshots, %d nodes deleted, %d capacity changes, servers' exit requests %s, generations granted in: %s%n",
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
                        ServerInternals.EXIT_REQUESTS,
                        grants.stream()
                                .map(g -> g.node()
                                        .substring(PATH.length() + 1, g.node().lastIndexOf('/')))
                                .distinct()
                                .sorted()
                                .toList());
                if (Boolean.getBoolean("handoff.faultDump")) {
                    grants.stream()
                            .sorted((x, y) -> Long.compare(x.validFrom(), y.validFrom()))
                            .forEach(g -> System.out.println("grant "
                                    + g.client() + " "
                                    + g.node().substring(g.node().lastIndexOf('-') + 1) + " w" + g.weight() + " req "
                                    + g.requested() / 1_000_000
                                    + " valid " + g.validFrom() / 1_000_000 + ".." + g.validTo() / 1_000_000));
                }
                assertTrue(unexpected.isEmpty(), () -> "unexpected failures: " + unexpected);
                assertEquals(started.get(), ended.get(), "every request ends");
                checkCapacity();
                checkGrantsFit();
                checkDeletedLeasesEnd();
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

    private void work(int client, ZooKeeperSemaphore s, LocalFront front) {
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
                    lease = LeaseFutures.awaitLease(f);
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
                // One hold of a single permit in thirty lasts more than twice the session timeout: across
                // several heartbeats, and across any expiry the nemesis causes meanwhile. (Only single
                // permits, outside the local front, so that a long hold leaves room for the others: a
                // long hold of a block or of two permits would stop every request behind it.)
                long holdMs = front == null && lease.permits() == 1 && random.nextInt(30) == 0
                        ? longHoldMs()
                        : random.nextInt(20);
                hold(client, lease, front != null ? FRONT_BLOCK : lease.permits(), requested, holdMs, null);
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

    /** Each semaphore's local state and each worker's stack, for a failure message. */
    private static String states(List<ZooKeeperSemaphore> semaphores, List<Thread> workers) {
        StringBuilder b = new StringBuilder();
        for (ZooKeeperSemaphore s : semaphores) {
            b.append("\n").append(s.describe());
        }
        for (Thread w : workers) {
            b.append("\n").append(w.getName()).append(" ").append(w.getState());
            for (StackTraceElement e : w.getStackTrace()) {
                b.append("\n    at ").append(e);
            }
        }
        return b.toString();
    }

    /** Curator's failures reach the future as KeeperException (checked), wrapped by LeaseFutures.awaitLease. */
    private static boolean isKeeper(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof KeeperException) {
                return true;
            }
        }
        return false;
    }

    /** More than twice the session timeout. */
    private long longHoldMs() {
        return sessionMs * 22L / 10 + ThreadLocalRandom.current().nextInt(sessionMs / 4);
    }

    /**
     * The lone client takes one permit (waiting up to 10 s) and holds it long on a thread of its
     * own, recording it as the workers do.
     *
     * @return the lease's node once the hold has started, or null if no permit came in time
     */
    private String startLoneHold(ZooKeeperSemaphore lone) throws InterruptedException {
        long requested = System.nanoTime();
        Optional<Lease> got;
        try {
            got = lone.tryAcquireBlocking(1, Duration.ofSeconds(10));
        } catch (RuntimeException e) {
            if (!(e instanceof SessionLostException) && !isKeeper(e)) {
                unexpected.add(e);
            }
            got = Optional.empty();
        }
        if (got.isEmpty()) {
            log("the lone client got no permit within 10 s");
            return null;
        }
        Lease lease = got.get();
        CompletableFuture<String> started = new CompletableFuture<>();
        loneHolders.add(thread("lone-holder", () -> {
            try {
                hold(LONE, lease, 1, requested, longHoldMs(), started);
            } catch (InterruptedException e) {
                lease.close();
            }
        }));
        try {
            return started.get(10, TimeUnit.SECONDS);
        } catch (ExecutionException | TimeoutException e) {
            return null; // not valid at once: nothing to aim at
        }
    }

    /** The server a client is connected to now (through its proxy), or -1: the ZooKeeper handle names its remote address. */
    private static int connectedServer(CuratorFramework curator, List<FreezableProxy> links) {
        try {
            String handle = curator.getZookeeperClient().getZooKeeper().toString();
            int at = handle.indexOf("remoteserver:");
            if (!handle.startsWith("State:CONNECTED") || at < 0) {
                return -1;
            }
            int end = handle.indexOf(' ', at);
            String remote = handle.substring(at, end < 0 ? handle.length() : end);
            String port = remote.substring(remote.lastIndexOf(':') + 1);
            for (int i = 0; i < links.size(); i++) {
                if (links.get(i).connectString().endsWith(":" + port)) {
                    return i;
                }
            }
        } catch (Exception e) {
            // closed or reconnecting: nowhere
        }
        return -1;
    }

    /**
     * The follower the lone client is connected to, after moving it off the leader if it is there
     * (its connection is reset, so that it goes on to the next server of its list); -1 if it is on
     * no follower within 3 s, or no leader is known.
     */
    private int loneOnAFollower(CuratorFramework curator, List<FreezableProxy> links, int leader)
            throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        boolean reset = false;
        while (true) {
            int server = connectedServer(curator, links);
            if (server >= 0 && leader >= 0 && server != leader) {
                return server;
            }
            if (System.nanoTime() > deadline) {
                String handle;
                try {
                    handle = curator.getZookeeperClient().getZooKeeper().toString();
                } catch (Exception e) {
                    handle = e.toString();
                }
                log("the lone client is on no follower (server " + server + ", leader " + leader + ", " + handle
                        + "): nothing to aim at");
                return -1;
            }
            if (server >= 0 && server == leader && !reset) {
                log("reset the lone client's connection to the leader, to move it to a follower");
                links.get(server).reset();
                reset = true;
            }
            Thread.sleep(50);
        }
    }

    private void hold(
            int client, Lease lease, long weight, long requested, long holdMs, CompletableFuture<String> started)
            throws InterruptedException {
        try {
            if (!lease.isValid()) {
                if (started != null) {
                    started.completeExceptionally(new IllegalStateException("not valid at once"));
                }
                return;
            }
            long from = System.nanoTime(); // valid at some point before this: count from the later end
            long to = from;
            long until = from + TimeUnit.MILLISECONDS.toNanos(holdMs);
            if (started != null) {
                started.complete(lease.node());
            }
            while (System.nanoTime() < until && !stop.get()) {
                Thread.sleep(holdMs > 100 ? 20 : 2);
                long t = System.nanoTime();
                if (!lease.isValid()) {
                    break; // the holder stops working on it
                }
                to = t; // valid at some point after t: count up to the earlier end
            }
            grants.add(new Grant(client, lease.node(), weight, lease.fencingToken(), requested, from, to));
        } finally {
            lease.close();
        }
    }

    /** Flips the capacity between CAPACITY and OTHER_CAPACITY, recording the write's span; returns the capacity now. */
    private long changeCapacity(CuratorFramework c, long capacityNow) {
        long next = capacityNow == CAPACITY ? OTHER_CAPACITY : CAPACITY;
        long from = System.nanoTime();
        if (writeCapacity(c, next)) {
            capacityChanges.add(new CapacityChange(from, System.nanoTime(), capacityNow, next));
            log("capacity " + capacityNow + " -> " + next);
            return next;
        }
        capacityChanges.add(new CapacityChange(from, Long.MAX_VALUE, capacityNow, next));
        log("capacity " + capacityNow + " -> " + next + " not confirmed: both count from now on");
        return Math.max(capacityNow, next);
    }

    /** Deletes the node as an operator would, recording when; false if it could not (then it is not recorded). */
    private boolean deleteNode(CuratorFramework c, String node) {
        deleted.put(node, System.nanoTime());
        try {
            c.delete().forPath(node);
            return true;
        } catch (Exception e) {
            try {
                if (c.checkExists().forPath(node) != null) {
                    deleted.remove(node); // still there: not deleted by us
                    return false;
                }
            } catch (Exception unknown) {
                return true; // it may have been deleted: counted as deleted from before the attempt
            }
            return true; // gone (by us, or released just before): either way not held past the attempt
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
            return deleteNode(c, victim) ? victim : null;
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

    /** Each node's time as valid, merged over a local front's leases, up to the node's deletion by the nemesis. */
    private List<Held> heldIntervals() {
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
        return held;
    }

    /** 1. At no instant do the permits of leases seen valid exceed the capacity in effect. */
    private void checkCapacity() {
        List<Held> held = heldIntervals();
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
                fail("over-admission: " + inUse + " permits of leases seen valid at once at " + at / 1_000_000
                        + " ms, capacity at most " + allowed + " since " + earliest / 1_000_000 + " ms:"
                        + describe(overlapping)
                        + "\ncapacity changes: " + capacityChanges + "\nnemesis:\n  " + String.join("\n  ", history));
            }
        }
        System.out.println("RandomFaultTest: peak permits of valid leases " + peak + " (capacity " + CAPACITY + " or "
                + OTHER_CAPACITY + ")");
    }

    /**
     * 2. Every grant fits at some instant of its decision. A request is decided from a read of the
     * queue made after it asked and before its holder saw the lease valid; at that read every
     * request ahead of it that was present counted, and the capacity was the one in effect then.
     * The leases ahead of it surely present at an instant are those seen valid at or before it and
     * again at or after it (a valid lease's node exists), so the grant must fit, with them, the
     * capacity in effect at some instant between its request and its first valid observation. This
     * is what a decision with a capacity older than the queue it counts breaks: a shrink, then a
     * release, then a grant that fits only the old capacity. (A local front's block is not checked
     * itself, since the test does not see when the front asked for it; it counts ahead of others.)
     */
    private void checkGrantsFit() {
        List<Held> held = heldIntervals();
        int checked = 0;
        for (Grant g : grants) {
            if (g.client() == CLIENTS - 1) {
                continue; // a local front's lease: its block was asked for at a time the test does not see
            }
            long lo = g.requested();
            long hi = g.validFrom();
            long[] key = orderKey(g.node());
            List<Held> ahead = new ArrayList<>();
            TreeSet<Long> instants = new TreeSet<>(List.of(lo, hi));
            for (Held h : held) {
                if (compareKeys(orderKey(h.node()), key) < 0 && h.from() <= hi && h.to() >= lo) {
                    ahead.add(h);
                    instants.add(h.from());
                    instants.add(h.to() + 1);
                }
            }
            for (CapacityChange c : capacityChanges) {
                instants.add(c.from());
                if (c.to() != Long.MAX_VALUE) {
                    instants.add(c.to() + 1);
                }
            }
            boolean fits = false;
            for (long t : instants.subSet(lo, true, hi, true)) {
                long sum = g.weight();
                for (Held h : ahead) {
                    if (h.from() <= t && t <= h.to()) {
                        sum += h.weight();
                    }
                }
                if (sum <= capacityAllowed(t, t)) {
                    fits = true;
                    break;
                }
            }
            checked++;
            if (!fits) {
                fail("a grant that never fit: " + g.node() + " (" + g.weight() + " permits) asked at " + lo / 1_000_000
                        + " ms and seen valid at " + hi / 1_000_000
                        + " ms, yet at every instant between, the leases seen valid ahead"
                        + " of it and the capacity in effect left no room for it:" + describe(ahead)
                        + "\ncapacity changes: " + capacityChanges + "\nnemesis:\n  " + String.join("\n  ", history));
            }
        }
        System.out.println("RandomFaultTest: " + checked + " grants fit the capacity with the leases ahead of them");
    }

    /**
     * 3. A lease whose node the nemesis deleted is not seen valid more than a session timeout after
     * the deletion: a watch tells the holder at once while it is connected, and otherwise the
     * local deadline passes within nine tenths of a session timeout of the last confirmation,
     * which cannot come later than the deletion without the holder's server having applied it.
     */
    private void checkDeletedLeasesEnd() {
        long bound = TimeUnit.MILLISECONDS.toNanos(sessionMs);
        int checked = 0;
        for (Grant g : grants) {
            Long at = deleted.get(g.node());
            if (at == null || g.validTo() < at) {
                continue;
            }
            checked++;
            if (g.validTo() - at > bound) {
                fail("a lease seen valid " + (g.validTo() - at) / 1_000_000
                        + " ms after its node was deleted (bound: the " + sessionMs + " ms session timeout): " + g
                        + "\nnemesis:\n  " + String.join("\n  ", history));
            }
        }
        System.out.println("RandomFaultTest: " + checked
                + " leases seen valid after their node's deletion, each within the bound");
    }

    private static String describe(List<Held> leases) {
        StringBuilder b = new StringBuilder();
        for (Held o : leases) {
            b.append("\n  ")
                    .append(o)
                    .append(" from ")
                    .append(o.from() / 1_000_000)
                    .append(" ms to ")
                    .append(o.to() / 1_000_000)
                    .append(" ms");
        }
        return b.toString();
    }

    /** A request node's place in the queue: its generation, then its sequence (the checker's own parse). */
    private static long[] orderKey(String node) {
        String generation = node.substring(PATH.length() + 1, node.lastIndexOf('/'));
        long[] parsed = parseIndependently(node.substring(node.lastIndexOf('/') + 1));
        return new long[] {Long.parseLong(generation.substring(generation.lastIndexOf('-') + 1)), parsed[1]};
    }

    private static int compareKeys(long[] a, long[] b) {
        return a[0] != b[0] ? Long.compare(a[0], b[0]) : Long.compare(a[1], b[1]);
    }

    /** 4. In each later snapshot of its generation, a granted request's prefix fits the capacity. */
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
