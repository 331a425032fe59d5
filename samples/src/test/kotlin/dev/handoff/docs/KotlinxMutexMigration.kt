// SPDX-License-Identifier: Apache-2.0
package dev.handoff.docs

// tag::kotlinx-mutex[]
import dev.handoff.Mutex
import dev.handoff.coroutines.asKotlinxMutex
import kotlinx.coroutines.sync.withLock

class Refresher(private val store: Store) {
    val lock = Mutex() // dev.handoff.Mutex
    private val mutex = lock.asKotlinxMutex() // was: kotlinx.coroutines.sync.Mutex(); create the view once

    suspend fun refresh(): Long = mutex.withLock(owner = this) { store.write(1) }
}
// end::kotlinx-mutex[]
