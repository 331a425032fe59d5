// SPDX-License-Identifier: Apache-2.0
package dev.handoff.docs

import dev.handoff.SemaphoreClosedException
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.async
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.yield
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertSame
import org.junit.jupiter.api.assertThrows
import org.junit.jupiter.api.Test

/** Runs the Kotlin snippet of docs/guide/fair-share.md through its three endings. */
class KotlinFairShareTest {
    private val rows = KotlinFairShare.Rows("3 rows")
    private var failing = false
    private val f = KotlinFairShare { if (failing) error("connection reset") else rows }

    private fun allBack() {
        assertEquals(0, f.connections.heldPermits("acme"))
        assertEquals(32, f.connections.availablePermits())
    }

    @Test
    fun success(): Unit = runBlocking {
        assertSame(rows, f.query("acme", "select 1"))
        allBack()
    }

    @Test
    fun failureOfTheWorkAfterTheGrant(): Unit = runBlocking {
        failing = true
        assertThrows<IllegalStateException> { f.query("acme", "select 1") }
        allBack()
    }

    @Test
    fun failureOfTheAcquisitionItself(): Unit = runBlocking {
        repeat(16) { check(f.connections.tryAcquire("acme", 1)) } // at the tenant's cap
        val query = async(start = CoroutineStart.UNDISPATCHED) { runCatching { f.query("acme", "select 1") } }
        while (f.connections.queueLength("acme") < 1) yield()
        f.connections.close()
        assertEquals(SemaphoreClosedException::class.java, query.await().exceptionOrNull()?.javaClass)
        f.connections.release("acme", 16)
        allBack()
    }
}
