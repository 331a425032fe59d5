// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import dev.handoff.zookeeper.Lease;
import dev.handoff.zookeeper.ZooKeeperSemaphore;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;

/**
 * Sample 15: a fencing token keeps an overtaken holder out of a shared store.
 *
 * <p>A holder can stop right after checking its lease (a GC pause, a frozen link) for longer than
 * its ZooKeeper session timeout; the server then grants the permits to the next replica, and the
 * first one resumes on its stale plan. So every write to the shared store carries the lease's
 * {@link Lease#fencingToken()}, which grows with the queue order across every replica, and the store
 * refuses a token lower than the highest it accepted for the key. Here replica A holds a cluster-wide
 * lock and writes; its session is expired from outside; B is granted and writes; then A writes
 * without looking at its lease. It prints the two tokens and what the store did with A's write.
 */
public final class FencingSample {

    /** What the run measured; {@code aValidAtTheEnd}: what A's lease says once A is told of the expiry. */
    public record Figures(
            long tokenA, long tokenB, boolean staleWriteRefused, String finalValue, boolean aValidAtTheEnd) {}

    /** The shared store: keeps, for each key, the highest token that wrote it, and refuses lower ones. */
    static final class FencedStore {
        private final Map<String, Long> highest = new HashMap<>();
        private final Map<String, String> values = new HashMap<>();

        /** Writes value under key if token is not lower than the highest that wrote key; says whether it did. */
        synchronized boolean write(String key, String value, long token) {
            if (token < highest.getOrDefault(key, Long.MIN_VALUE)) {
                return false; // an overtaken holder
            }
            highest.put(key, token);
            values.put(key, value);
            return true;
        }

        synchronized String read(String key) {
            return values.get(key);
        }
    }

    private FencingSample() {}

    /** Runs the two replicas against a fresh in-process ZooKeeper and returns the figures. */
    public static Figures run() throws Exception {
        try (InProcessZooKeeper zookeeper = new InProcessZooKeeper()) {
            CuratorFramework a = zookeeper.connect();
            FencedStore store = new FencedStore();
            ZooKeeperSemaphore lockA = new ZooKeeperSemaphore(a, "/locks/report", 1);
            ZooKeeperSemaphore lockB = new ZooKeeperSemaphore(zookeeper.connect(), "/locks/report", 1);
            Lease leaseA = lockA.acquireBlocking(1);
            store.write("report", "A: draft", leaseA.fencingToken());
            zookeeper.expireSession(a); // A "pauses" past its session timeout
            try (Lease leaseB = lockB.acquireBlocking(1)) { // granted once A's node is gone
                store.write("report", "B: final", leaseB.fencingToken());
                // A resumes and writes on its stale plan, without checking its lease first:
                boolean accepted = store.write("report", "A: stale overwrite", leaseA.fencingToken());
                leaseA.whenLost().toCompletableFuture().get(30, TimeUnit.SECONDS); // A is told, later
                Figures f = new Figures(
                        leaseA.fencingToken(),
                        leaseB.fencingToken(),
                        !accepted,
                        store.read("report"),
                        leaseA.isValid());
                leaseA.close(); // releasing a lost lease is harmless
                return f;
            }
        }
    }

    /** Runs the sample and prints its figures ({@code args} are ignored). */
    public static void main(String[] args) throws Exception {
        System.out.println("15. Fencing: a store refuses a holder whose lease was overtaken");
        Figures f = run();
        System.out.println(
                "   A's token " + f.tokenA() + ", B's token " + f.tokenB() + " (granted after A's session expired)");
        System.out.println(
                "   A's stale write after B's: " + (f.staleWriteRefused() ? "refused by the store" : "ACCEPTED"));
        System.out.println("   the store holds: " + f.finalValue() + "; A's lease says valid: " + f.aValidAtTheEnd());
    }
}
