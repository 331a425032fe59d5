// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import dev.handoff.Permits;
import dev.handoff.RwLock;
import java.util.Arrays;
import java.util.concurrent.locks.LockSupport;

/**
 * The cache of {@link RwLockCacheSample}: a price list of 100 entries behind an {@link RwLock}. Many
 * readers read it at once under the read lock; a refresh gives each entry, one at a time, the same
 * new version under the write lock, so no read sees a half-done refresh. The {@link Permits} handle
 * unlocks at the end of each try-with-resources block, however the block ends.
 */
final class PriceCache {

    private final RwLock lock = new RwLock();
    private final long[] versions = new long[100]; // guarded by lock

    /** True if every entry has the same version, as it must. */
    boolean readConsistent() throws InterruptedException {
        try (Permits read = lock.readLockBlocking()) { // read-unlocked when the block ends
            long first = versions[0];
            LockSupport.parkNanos(20_000); // a slow-ish read
            return Arrays.stream(versions).allMatch(v -> v == first);
        }
    }

    void refresh(long version) throws InterruptedException {
        try (Permits write = lock.writeLockBlocking()) { // write-unlocked when the block ends
            Arrays.fill(versions, version);
        }
    }

    /** True if the lock is neither held nor awaited. */
    boolean isFree() {
        return !lock.isWriteLocked() && lock.readLockCount() == 0 && lock.queueLength() == 0;
    }
}
