// SPDX-License-Identifier: Apache-2.0
package dev.handoff.docs

import dev.handoff.SemaphoreClosedException
import dev.handoff.docs.Scenario.Ending
import dev.handoff.zookeeper.ZooKeeperSemaphore
import java.util.concurrent.TimeUnit
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.async
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.yield
import org.apache.curator.framework.CuratorFrameworkFactory
import org.apache.curator.retry.RetryOneTime
import org.apache.curator.test.TestingServer
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertInstanceOf
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.Timeout
import org.junit.jupiter.params.ParameterizedTest
import org.junit.jupiter.params.provider.EnumSource

/**
 * Runs the Kotlin snippets of README.md and docs/ through success, a failure of the work after the
 * grant and a failure of the acquisition itself (see [Scenario]).
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class KotlinSnippetsTest {

    private val oneMiB = ByteArray(1 shl 20)

    @ParameterizedTest
    @EnumSource(Ending::class)
    fun readmeWithPermits(ending: Ending) {
        val work = Fakes.Work(ending)
        val uploads = Uploads(Downstream(work))
        Scenario.expectUsual(Scenario.of(uploads.inFlight), ending, work) { runBlocking { uploads.upload(oneMiB) } }
    }

    @ParameterizedTest
    @EnumSource(Ending::class)
    fun readmeKotlinxMigration(ending: Ending) {
        val work = Fakes.Work(ending)
        val fetcher = Fetcher(Http(work))
        Scenario.expectUsual(Scenario.of(fetcher.pool), ending, work) { runBlocking { fetcher.fetch("https://example.org/") } }
    }

    @Test
    fun theKotlinxViewQueuesOnTheHandoffSemaphore(): Unit = runBlocking {
        val fetcher = Fetcher(Http(Fakes.Work(Ending.SUCCESS)))
        fetcher.pool.acquireBlocking(8).use {
            val waiting = async(Dispatchers.Default, CoroutineStart.UNDISPATCHED) { fetcher.fetch("https://example.org/") }
            while (fetcher.pool.queueLength() == 0) yield()
            assertEquals(1, fetcher.pool.queueLength())
            it.release()
            assertEquals("body of https://example.org/", waiting.await())
        }
    }

    @ParameterizedTest
    @EnumSource(Ending::class)
    fun kotlinAcquireAndRelease(ending: Ending) {
        val work = Fakes.Work(ending)
        val importer = Importer(Store(work))
        Scenario.expectUsual(Scenario.of(importer.rows), ending, work) { runBlocking { importer.importOne(100) } }
    }

    @ParameterizedTest
    @EnumSource(Ending::class)
    fun kotlinTimedTryAcquire(ending: Ending) {
        val work = Fakes.Work(ending)
        val importer = Importer(Store(work))
        val failure = Scenario.failureOf(Scenario.of(importer.rows), ending) { runBlocking { importer.importIfQuick(100) } }
        when (ending) {
            Ending.SUCCESS -> assertNull(failure)
            Ending.WORK_FAILS -> assertInstanceOf(Fakes.WorkFailed::class.java, failure)
            // Closed, or timed out first while the blocker held everything: either way nothing held, no work.
            Ending.ACQUISITION_FAILS -> assertTrue(failure == null || failure is SemaphoreClosedException, "$failure")
        }
        assertEquals(if (ending == Ending.ACQUISITION_FAILS) 0 else 1, work.runs.get())
    }

    @ParameterizedTest
    @EnumSource(Ending::class)
    fun kotlinAcquireUpTo(ending: Ending) {
        val work = Fakes.Work(ending)
        val importer = Importer(Store(work))
        Scenario.expectUsual(Scenario.of(importer.rows), ending, work) { runBlocking { importer.importBatch() } }
    }

    @Test
    fun kotlinCloseAndJoinWaitsForTheHolders(): Unit = runBlocking {
        val importer = Importer(Store(Fakes.Work(Ending.SUCCESS)))
        val held = importer.rows.acquireBlocking(10)
        val stopping = async(Dispatchers.Default) { importer.stop() }
        while (!importer.rows.isClosed) yield()
        assertFalse(stopping.isCompleted)
        held.release()
        stopping.await()
        assertEquals(512, importer.rows.availablePermits())
    }

    @ParameterizedTest
    @EnumSource(Ending::class)
    fun kotlinMutexWithLock(ending: Ending) {
        val work = Fakes.Work(ending)
        val inventory = Inventory(Store(work))
        Scenario.expectUsual(Scenario.of(inventory.mutex), ending, work) { runBlocking { inventory.reserve(3) } }
    }

    @ParameterizedTest
    @EnumSource(Ending::class)
    fun kotlinReadAndWriteLocks(ending: Ending) {
        val work = Fakes.Work(ending)
        val prices = PriceList(Store(work))
        Scenario.expectUsual(Scenario.of(prices.lock, false), ending, work) { runBlocking { prices.update("sku", 5) } }
        val reader = PriceList(Store(work))
        val read = Scenario.failureOf(Scenario.of(reader.lock, true), ending) { runBlocking { reader.price("sku") } }
        if (ending == Ending.ACQUISITION_FAILS) {
            assertInstanceOf(SemaphoreClosedException::class.java, read)
        } else {
            assertNull(read) // a map lookup cannot fail after the grant
        }
    }

    @ParameterizedTest
    @EnumSource(Ending::class)
    fun kotlinxMutexView(ending: Ending) {
        val work = Fakes.Work(ending)
        val refresher = Refresher(Store(work))
        Scenario.expectUsual(Scenario.of(refresher.lock), ending, work) { runBlocking { refresher.refresh() } }
    }

    @ParameterizedTest
    @EnumSource(Ending::class)
    fun zookeeperWithPermits(ending: Ending) {
        TestingServer(true).use { server ->
            CuratorFrameworkFactory.newClient(server.connectString, RetryOneTime(100)).use { curator ->
                curator.start()
                val work = Fakes.Work(ending)
                val budget = ZooKeeperSemaphore(curator, "/budgets/downstream-mib", 64)
                val uploads = ClusterUploads(budget, Downstream(work))
                if (ending == Ending.ACQUISITION_FAILS) {
                    budget.acquireBlocking(64).use {
                        runBlocking {
                            val waiting = async(Dispatchers.Default) { uploads.upload(oneMiB) }
                            repeat(20) { yield() }
                            waiting.cancel() // a cancelled coroutine withdraws its request
                            assertTrue(runCatching { waiting.await() }.isFailure)
                        }
                    }
                    assertEquals(0, work.runs.get())
                } else {
                    val failure = runCatching { runBlocking { uploads.upload(oneMiB) } }.exceptionOrNull()
                    if (ending == Ending.SUCCESS) assertNull(failure) else assertInstanceOf(Fakes.WorkFailed::class.java, failure)
                    assertEquals(1, work.runs.get())
                }
                budget.acquireAsync(64).get(1, TimeUnit.MINUTES).use { assertEquals(64, it.permits()) } // all came back
            }
        }
    }
}
