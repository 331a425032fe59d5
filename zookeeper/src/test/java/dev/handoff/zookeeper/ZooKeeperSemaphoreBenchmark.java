// SPDX-License-Identifier: Apache-2.0
package dev.handoff.zookeeper;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.test.TestingServer;

/**
 * Acquire-and-release round trips against an in-process ZooKeeper ({@link TestingServer}): this
 * semaphore versus Curator's {@code InterProcessSemaphoreV2} asked for the same weights, and the
 * ZooKeeper watches fired per grant. A plain main, not a test (no timed assertions anywhere):
 *
 * <pre>
 * mvn -B -q -o -Dkotlin.compiler.daemon=false -pl zookeeper -am test-compile
 * mvn -B -q -o -pl zookeeper dependency:build-classpath -Dmdep.outputFile=target/cp.txt -Dmdep.includeScope=test
 * java -cp zookeeper/target/test-classes:zookeeper/target/classes:java-core/target/classes:$(cat zookeeper/target/cp.txt) \
 *     dev.handoff.zookeeper.ZooKeeperSemaphoreBenchmark [seconds per figure, default 3]
 * </pre>
 *
 * <p>Uncontended: one thread acquires n of 8 permits and releases, in a loop. Contended: two
 * clients with 4 threads each acquire n of 8 permits, hold them for no time, and release. Our
 * {@code Lease.close()} deletes in the background (Curator orders the session's next request after
 * it); {@code returnAll} of Curator's recipe deletes synchronously. Figures: mean microseconds per
 * acquire+release (uncontended) and grants per second (contended).
 */
public final class ZooKeeperSemaphoreBenchmark {

    private static final int CAPACITY = 8;
    /** Smaller under contention, so that requests wait (8 threads x n > 4) and watches fire. */
    private static final int CONTENDED_CAPACITY = 4;

    private interface Subject {
        /** One acquire and release; false if the acquire gave up. */
        boolean acquireRelease(long n) throws Exception;
    }

    private ZooKeeperSemaphoreBenchmark() {}

    /**
     * Runs every figure and prints a table.
     *
     * @param args optional: the seconds per figure
     * @throws Exception if the in-process server fails
     */
    public static void main(String[] args) throws Exception {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 3;
        System.out.printf(
                "ZooKeeperSemaphoreBenchmark: %.1f s per figure, capacity %d, JDK %s, %d cores%n",
                seconds, CAPACITY, Runtime.version(), Runtime.getRuntime().availableProcessors());
        try (TestingServer server = new TestingServer(true)) {
            List<CuratorFramework> clients = new ArrayList<>();
            for (int i = 0; i < 2; i++) {
                CuratorFramework c = CuratorFrameworkFactory.newClient(
                        server.getConnectString(), 10_000, 5_000, new ExponentialBackoffRetry(50, 8));
                c.start();
                c.blockUntilConnected(10, TimeUnit.SECONDS);
                clients.add(c);
            }
            int round = 0;
            for (long n : new long[] {1, 3}) {
                // Uncontended.
                ZooKeeperSemaphore ours = new ZooKeeperSemaphore(clients.get(0), "/bench/ours-" + round, CAPACITY);
                InterProcessSemaphoreV2 theirs =
                        new InterProcessSemaphoreV2(clients.get(0), "/bench/v2-" + round, CAPACITY);
                double oursUs = uncontended(n, seconds, k -> {
                    ours.acquireBlocking(k).close();
                    return true;
                });
                double theirsUs = uncontended(n, seconds, k -> {
                    Collection<org.apache.curator.framework.recipes.locks.Lease> leases = theirs.acquire((int) k);
                    theirs.returnAll(leases);
                    return true;
                });
                System.out.printf(
                        "uncontended n=%d: ZooKeeperSemaphore %.0f us/op, InterProcessSemaphoreV2 %.0f us/op (ratio %.2f)%n",
                        n, oursUs, theirsUs, theirsUs / oursUs);

                // Contended: 2 clients x 4 threads.
                List<ZooKeeperSemaphore> oursPerClient = new ArrayList<>();
                List<InterProcessSemaphoreV2> theirsPerClient = new ArrayList<>();
                for (CuratorFramework c : clients) {
                    oursPerClient.add(new ZooKeeperSemaphore(c, "/bench/ours-c-" + round, CONTENDED_CAPACITY));
                    theirsPerClient.add(new InterProcessSemaphoreV2(c, "/bench/v2-c-" + round, CONTENDED_CAPACITY));
                }
                long watchesBefore = oursPerClient.stream()
                        .mapToLong(s -> s.watchEvents.get())
                        .sum();
                long grantsBefore =
                        oursPerClient.stream().mapToLong(s -> s.grants.get()).sum();
                long readsBefore =
                        oursPerClient.stream().mapToLong(s -> s.reads.get()).sum();
                double oursRate = contended(n, seconds, i -> {
                    ZooKeeperSemaphore s = oursPerClient.get(i % 2);
                    return k -> {
                        s.acquireBlocking(k).close();
                        return true;
                    };
                });
                long grants =
                        oursPerClient.stream().mapToLong(s -> s.grants.get()).sum() - grantsBefore;
                long watches = oursPerClient.stream()
                                .mapToLong(s -> s.watchEvents.get())
                                .sum()
                        - watchesBefore;
                long reads =
                        oursPerClient.stream().mapToLong(s -> s.reads.get()).sum() - readsBefore;
                // Curator's recipe takes n leases one by one while holding its internal lock, so
                // clients holding some leases each can wait for ever (the leases they hold are
                // never returned): a timed acquire, counted, keeps the benchmark going.
                AtomicLong stalls = new AtomicLong();
                double theirsRate = contended(n, seconds, i -> {
                    InterProcessSemaphoreV2 s = theirsPerClient.get(i % 2);
                    return k -> {
                        Collection<org.apache.curator.framework.recipes.locks.Lease> leases =
                                s.acquire((int) k, 500, TimeUnit.MILLISECONDS);
                        if (leases == null) {
                            stalls.incrementAndGet();
                            return false;
                        }
                        s.returnAll(leases);
                        return true;
                    };
                });
                System.out.printf(
                        "contended n=%d of %d (2 clients x 4 threads): ZooKeeperSemaphore %.0f grants/s, InterProcessSemaphoreV2 %.0f grants/s (ratio %.2f), %d of its acquires stalled 500 ms and gave up%n",
                        n, CONTENDED_CAPACITY, oursRate, theirsRate, oursRate / theirsRate, stalls.get());
                System.out.printf(
                        "   ZooKeeperSemaphore: %.2f watches fired per grant, %.2f getChildren reads per grant (%d grants)%n",
                        (double) watches / grants, (double) reads / grants, grants);
                round++;
            }
            for (CuratorFramework c : clients) {
                c.close();
            }
        }
    }

    private interface SubjectFactory {
        Subject forThread(int i);
    }

    private static double uncontended(long n, double seconds, Subject subject) throws Exception {
        long warmupEnd = System.nanoTime() + (long) (seconds * 0.3e9);
        while (System.nanoTime() < warmupEnd) {
            subject.acquireRelease(n);
        }
        long ops = 0;
        long start = System.nanoTime();
        long end = start + (long) (seconds * 1e9);
        long now;
        do {
            subject.acquireRelease(n);
            ops++;
            now = System.nanoTime();
        } while (now < end);
        return (now - start) / 1e3 / ops;
    }

    private static double contended(long n, double seconds, SubjectFactory factory) throws InterruptedException {
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong ops = new AtomicLong();
        AtomicBoolean counting = new AtomicBoolean();
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            Subject s = factory.forThread(i);
            Thread t = new Thread(() -> {
                while (!stop.get()) {
                    boolean granted;
                    try {
                        granted = s.acquireRelease(n);
                    } catch (Exception e) {
                        throw new IllegalStateException(e);
                    }
                    if (counting.get() && granted) {
                        ops.incrementAndGet();
                    }
                }
            });
            t.start();
            threads.add(t);
        }
        Thread.sleep((long) (seconds * 300));
        counting.set(true);
        long start = System.nanoTime();
        Thread.sleep((long) (seconds * 1000));
        counting.set(false);
        long elapsed = System.nanoTime() - start;
        stop.set(true);
        for (Thread t : threads) {
            t.join();
        }
        return ops.get() / (elapsed / 1e9);
    }
}
