// SPDX-License-Identifier: Apache-2.0
package dev.handoff.docs

// tag::kotlin-locks[]
import dev.handoff.Mutex
import dev.handoff.RwLock
import dev.handoff.coroutines.withLock
import dev.handoff.coroutines.withReadLock
import dev.handoff.coroutines.withWriteLock

class Inventory(private val store: Store) {
    val mutex = Mutex()
    private var reserved = 0L

    suspend fun reserve(n: Long): Long = mutex.withLock { // suspends, never blocks a thread
        reserved += store.write(n)
        reserved
    }
}

class PriceList(private val store: Store) {
    val lock = RwLock()
    private val prices = HashMap<String, Long>()

    suspend fun price(sku: String): Long? = lock.withReadLock { prices[sku] }

    suspend fun update(sku: String, price: Long): Long? = lock.withWriteLock {
        prices.put(sku, store.write(price))
    }
}
// end::kotlin-locks[]
