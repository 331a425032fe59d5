// SPDX-License-Identifier: Apache-2.0
package dev.handoff.zookeeper;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import org.apache.curator.framework.CuratorFramework;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.data.Stat;

/*
 * The capacity of one ZooKeeperSemaphore's path: the path's data, a decimal number in ASCII
 * ("16"), whose data version is the capacity's version. This class opens it (creates the path with
 * the constructor's capacity, claims an empty node, refuses a different capacity), writes it
 * (setCapacity: a versioned setData over the version just read, again if another writer won),
 * keeps a watch on it, and applies a newer one: waiters that can never fit fail, the others are
 * decided again.
 *
 * The value kept here is the last read or written, for capacity(), the weight checks and the
 * failing of waiters. A decision never uses it as it is: the evaluation reads the capacity after
 * the queue (Evaluation.readCapacityThenDecide) and decides with that read.
 *
 * value and version are written under lock (by the event thread, setCapacity's caller and the
 * constructor), so that an older read landing late never replaces a newer value; value is read by
 * any thread.
 */
final class Capacity {

    private final ZooKeeperSemaphore owner;
    private final CuratorFramework client;
    private final String path;
    private final ReentrantLock lock = new ReentrantLock();
    /** The capacity as last read or written; written under lock, read by any thread. */
    private volatile long value;
    /** The data version of the path that value was read at; under lock. */
    private int version;
    /** The watch on the path's data: a capacity written by any client is read at once. */
    final Watcher watcher = this::dataChanged;

    Capacity(ZooKeeperSemaphore owner, CuratorFramework client, String path, long initial) {
        this.owner = owner;
        this.client = client;
        this.path = path;
        this.value = initial;
    }

    private void dataChanged(WatchedEvent event) {
        if (event.getType() == Watcher.Event.EventType.NodeDataChanged) {
            owner.watchEvents.incrementAndGet();
            read(true);
        }
    }

    long value() {
        return value;
    }

    /**
     * Creates the path holding this capacity if it is absent (parents as container nodes), claims
     * it if its data is empty, and checks that it holds this capacity; leaves a watch on it. Blocks.
     *
     * @throws IllegalArgumentException if the path holds something else (the message names both)
     */
    void open(String call) throws Exception {
        long mine = value;
        byte[] data = Long.toString(mine).getBytes(StandardCharsets.US_ASCII);
        try {
            client.create()
                    .creatingParentContainersIfNeeded()
                    .withMode(CreateMode.PERSISTENT)
                    .forPath(path, data);
        } catch (KeeperException.NodeExistsException alreadyThere) {
            // read it below
        }
        while (true) {
            Stat stat = new Stat();
            byte[] there =
                    client.getData().storingStatIn(stat).usingWatcher(watcher).forPath(path);
            if (there == null || there.length == 0) {
                // An empty node (made by hand, or by a parent-creating call): claim it, once.
                try {
                    client.setData().withVersion(stat.getVersion()).forPath(path, data);
                    continue;
                } catch (KeeperException.BadVersionException raced) {
                    continue;
                }
            }
            long theirs = parse(there);
            if (theirs < 0) {
                throw new IllegalArgumentException(
                        call + ": the data at " + path + " is not a capacity: \"" + printable(there)
                                + "\" (expected a decimal number from 1 to " + ZooKeeperSemaphore.MAX_CAPACITY + ")");
            }
            if (theirs != mine) {
                throw new IllegalArgumentException(call + ": " + path + " already holds the capacity " + theirs
                        + ", not " + mine + "; every client of a path must pass the same capacity");
            }
            lock.lock();
            try {
                version = stat.getVersion();
            } finally {
                lock.unlock();
            }
            return;
        }
    }

    /** Writes n for every client (a versioned write over the version just read, again if another writer won). Blocks. */
    void write(long n) throws Exception {
        byte[] data = Long.toString(n).getBytes(StandardCharsets.US_ASCII);
        while (true) {
            Stat stat = new Stat();
            client.getData().storingStatIn(stat).forPath(path);
            try {
                long sentAt = owner.nanoClock.getAsLong();
                Stat written = client.setData().withVersion(stat.getVersion()).forPath(path, data);
                owner.guard.ordered(sentAt);
                changed(n, written.getVersion());
                return;
            } catch (KeeperException.BadVersionException raced) {
                // another setCapacity won: write ours over the one we now read
            }
        }
    }

    /** Reads the capacity (and sets the watch again); then, if asked, evaluates. A failed send is retried after RETRY_MS. */
    void read(boolean thenEvaluate) {
        try {
            client.getData()
                    .usingWatcher(watcher)
                    .inBackground((c, e) -> {
                        if (e.getResultCode() == 0 && e.getStat() != null) {
                            long n = parse(e.getData());
                            if (n > 0) {
                                changed(n, e.getStat().getVersion());
                            } else {
                                owner.alarms.raise(
                                        path,
                                        "the data at the path is not a capacity: \"" + printable(e.getData())
                                                + "\"; keeping " + value);
                            }
                        }
                        if (thenEvaluate) {
                            owner.evaluate();
                        }
                    })
                    .forPath(path);
        } catch (Exception e) {
            ZooKeeperSemaphore.TIMER.schedule(
                    () -> read(thenEvaluate), ZooKeeperSemaphore.RETRY_MS, TimeUnit.MILLISECONDS);
        }
    }

    /** A newer capacity was read or written: waiters that can no longer fit fail; the others are decided again. */
    void changed(long n, int newVersion) {
        lock.lock();
        try {
            if (newVersion < version || (newVersion == version && n == value)) {
                return; // not newer than the one we have
            }
            value = n;
            version = newVersion;
        } finally {
            lock.unlock();
        }
        for (Request r : owner.waiting) {
            if (r.n > n) {
                r.future.completeExceptionally(new IllegalStateException(
                        r.call + "(" + r.n + ") on " + path + ": the weight " + r.n + " exceeds the capacity " + n
                                + " (set by setCapacity), so it could never be granted"));
            }
        }
        owner.evaluate();
    }

    /** The capacity in {@code data}, or -1 if it is not one. */
    static long parse(byte[] data) {
        String s = new String(data, StandardCharsets.US_ASCII).trim();
        if (s.isEmpty() || s.length() > 19) {
            return -1;
        }
        for (int i = 0; i < s.length(); i++) {
            if (s.charAt(i) < '0' || s.charAt(i) > '9') {
                return -1;
            }
        }
        long v = Long.parseLong(s);
        return v >= 1 && v <= ZooKeeperSemaphore.MAX_CAPACITY ? v : -1;
    }

    /** Up to 40 bytes of data, for a message: printable ASCII as it is, the rest as \xNN. */
    static String printable(byte[] data) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < Math.min(data.length, 40); i++) {
            int c = data[i] & 0xff;
            b.append(c >= 0x20 && c < 0x7f ? String.valueOf((char) c) : String.format("\\x%02x", c));
        }
        return data.length > 40 ? b + "..." : b.toString();
    }
}
