// SPDX-License-Identifier: Apache-2.0
package dev.handoff.docs

// tag::kotlin-faces[]
import dev.handoff.Semaphore
import dev.handoff.coroutines.acquire
import dev.handoff.coroutines.acquireUpTo
import dev.handoff.coroutines.closeAndJoin
import dev.handoff.coroutines.tryAcquire
import kotlin.time.Duration.Companion.milliseconds

class Importer(private val store: Store) {
    val rows = Semaphore(512)

    suspend fun importOne(cost: Long) {
        rows.acquire(cost) // suspends in FIFO order; cancellable
        try {
            store.write(cost)
        } finally {
            rows.release(cost) // acquire and release may sit in different places
        }
    }

    suspend fun importIfQuick(cost: Long): Boolean {
        if (!rows.tryAcquire(cost, 200.milliseconds)) return false // timed out: nothing held
        try {
            store.write(cost)
        } finally {
            rows.release(cost)
        }
        return true
    }

    suspend fun importBatch(): Long {
        val granted = rows.acquireUpTo(64, 512) // at least 64, as many as are free up to 512
        try {
            return store.write(granted)
        } finally {
            rows.release(granted)
        }
    }

    suspend fun stop() = rows.closeAndJoin() // waiters fail now; returns once every permit is back
}
// end::kotlin-faces[]
