// SPDX-License-Identifier: Apache-2.0
package dev.handoff.docs;

import dev.handoff.Mutex;
import dev.handoff.Permits;
import dev.handoff.RwLock;
import dev.handoff.docs.Fakes.Work;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/** The locks guide and the README's Mutex/RwLock example. */
final class Locks {

    record Product(String sku, long price) {
    }

    // tag::locks-mutex[]
    final class Account {
        final Mutex mutex = Mutex.builder().name("account").build();
        private long balance;

        void deposit(long amount) throws InterruptedException {
            try (Permits locked = mutex.lockBlocking()) {  // parks; FIFO among all waiters
                audit.record(amount);
                balance += amount;
            }                                              // unlocked here, however the block ends
        }

        CompletableFuture<Long> saveAsync() {              // no thread waits for the lock
            return mutex.withLockAsync(() -> store.save(balance)); // unlocked when the save completes
        }
    }
    // end::locks-mutex[]

    // tag::locks-rwlock[]
    final class Catalog {
        final RwLock lock = new RwLock();
        private final Map<String, Product> products = new HashMap<>();

        Product find(String sku) throws InterruptedException {
            try (Permits reading = lock.readLockBlocking()) { // many readers at once
                return products.get(sku);
            }
        }

        Product replace(Product fresh) throws InterruptedException {
            // waits for the readers ahead; later readers wait for it
            try (Permits writing = lock.writeLockBlocking()) {
                Product old = products.put(fresh.sku(), fresh);
                lock.downgrade();             // now a read lock: readers may join, no writer can
                audit.record(fresh.price());
                return old;
            }                                 // releases what it holds now: the read lock
        }
    }
    // end::locks-rwlock[]

    /** The audit trail the examples write to: the scenario's work. */
    final class Audit {
        void record(long value) {
            work.run();
        }
    }

    /** An asynchronous store: the scenario's work, later, on another thread. */
    final class Store {
        CompletableFuture<Long> save(long balance) {
            return work.async(balance);
        }
    }

    private final Work work;
    final Audit audit = new Audit();
    final Store store = new Store();

    Locks(Work work) {
        this.work = work;
    }
}
