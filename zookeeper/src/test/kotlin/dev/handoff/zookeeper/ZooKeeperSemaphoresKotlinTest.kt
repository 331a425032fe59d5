// SPDX-License-Identifier: Apache-2.0
package dev.handoff.zookeeper

import java.util.concurrent.TimeUnit
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.async
import kotlinx.coroutines.cancelAndJoin
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import kotlinx.coroutines.yield
import org.apache.curator.test.TestingServer
import org.junit.jupiter.api.AfterEach
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.BeforeEach
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.Timeout

/**
 * The suspend faces: acquire, withPermits, cancellation withdraws the node, a grant racing a cancel
 * is released.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ZooKeeperSemaphoresKotlinTest {

    private lateinit var server: TestingServer
    private lateinit var clients: Clients

    @BeforeEach
    fun start() {
        server = TestingServer(true)
        clients = Clients(server.connectString)
    }

    @AfterEach
    fun stop() {
        clients.close()
        server.close()
    }

    @Test
    fun withPermitsReleasesOnReturnAndOnThrow(): Unit = runBlocking {
        val c = clients.start()
        val s = ZooKeeperSemaphore(c, "/handoff-test/kotlin-with", 3)
        val result =
            s.withPermits(3) {
                assertEquals(1, Clients.children(c, s.path()).size)
                "done"
            }
        assertEquals("done", result)
        assertThrows(IllegalStateException::class.java) {
            runBlocking { s.withPermits(2) { throw IllegalStateException("work failed") } }
        }
        val lease = s.acquire(3) // all back: nothing leaked by either
        lease.close()
        Clients.await("empty") { Clients.children(c, s.path()).isEmpty() }
        assertThrows(IllegalArgumentException::class.java) { runBlocking { s.acquire(4) } }
    }

    @Test
    fun cancellingAWaitingCoroutineWithdrawsItsNode(): Unit = runBlocking {
        val c = clients.start()
        val s = ZooKeeperSemaphore(c, "/handoff-test/kotlin-cancel", 2)
        val held = s.acquire(2)
        val waiter = launch(Dispatchers.Default) { s.withPermits(1) { error("never granted") } }
        Clients.await("queued") { Clients.children(c, s.path()).size == 2 }
        waiter.cancelAndJoin()
        Clients.await("withdrawn") { Clients.children(c, s.path()).size == 1 }
        held.close()
        val front = s.withLocalFront(2)
        front.withPermits(2) { assertTrue(front.holdsBlock()) }
        Clients.await("empty") { Clients.children(c, s.path()).isEmpty() }
    }

    /** The downstream of the guide's Kotlin example. */
    class Downstream(private val failing: Boolean) {
        var sends = 0

        fun send(body: ByteArray): Int {
            sends++
            check(!failing) { "downstream refused" }
            return body.size
        }
    }

    @Test
    fun theGuidesKotlinPatternRunsAndReleasesHoweverItEnds(): Unit = runBlocking {
        val c = clients.start()
        val budget = ZooKeeperSemaphore(c, "/budgets/downstream-mib", 64)
        var downstream = Downstream(failing = false)
        // the pattern of the ZooKeeper guide's Kotlin example (checked word for word in the
        // samples' doc tests)
        suspend fun upload(body: ByteArray): Int =
            budget.withPermits(maxOf(1L, (body.size + (1L shl 20) - 1) shr 20)) {
                downstream.send(body)
            }
        assertEquals(3 shl 20, upload(ByteArray(3 shl 20)))
        downstream = Downstream(failing = true)
        assertThrows(IllegalStateException::class.java) { runBlocking { upload(ByteArray(10)) } }
        assertThrows(IllegalArgumentException::class.java) {
            runBlocking { upload(ByteArray(65 shl 20)) }
        }
        assertEquals(1, downstream.sends)
        Clients.await("empty") { Clients.children(c, budget.path()).isEmpty() }
        budget.acquire(64).close()
    }

    @Test
    fun aGrantRacingTheCancelIsReleased(): Unit = runBlocking {
        val c = clients.start()
        val s = ZooKeeperSemaphore(c, "/handoff-test/kotlin-race", 1)
        repeat(30) { i ->
            val holder = s.acquire(1)
            val racer =
                async(Dispatchers.Default, start = CoroutineStart.UNDISPATCHED) { s.acquire(1) }
            holder.close()
            repeat(i % 5) { yield() }
            racer.cancel()
            val got = runCatching { racer.await() }.getOrNull()
            got?.close()
        }
        Clients.await("no node left") { Clients.children(c, s.path()).isEmpty() }
        val all = withTimeout(10_000) { s.acquire(1) }
        assertTrue(all.isValid)
        all.close()
        assertFalse(all.isValid)
    }
}
