// SPDX-License-Identifier: Apache-2.0
package dev.handoff.docs

import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.yield
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows

/**
 * The Kotlin example of docs/guide/adaptive.md ([Crawler]) through success, a failure of the work
 * after the grant, and a wait that ends before the grant (cancelled): every path gives its permit back.
 */
class KotlinAdaptiveTest {

    private fun Crawler.allBack() {
        assertEquals(0L, adaptive.inFlight())
        assertEquals(adaptive.semaphore().capacity(), adaptive.semaphore().availablePermits())
    }

    @Test
    fun success(): Unit = runBlocking {
        val work = Fakes.Work(Scenario.Ending.SUCCESS)
        val crawler = Crawler(Http(work))
        assertEquals("body of /a", crawler.fetch("/a"))
        assertEquals(1, work.runs.get())
        crawler.allBack()
    }

    @Test
    fun workFails(): Unit = runBlocking {
        val crawler = Crawler(Http(Fakes.Work(Scenario.Ending.WORK_FAILS)))
        assertThrows<Fakes.WorkFailed> { runBlocking { crawler.fetch("/a") } }
        crawler.allBack()
    }

    @Test
    fun aWaitCancelledBeforeTheGrantHoldsNothing(): Unit = runBlocking {
        val work = Fakes.Work(Scenario.Ending.SUCCESS)
        val crawler = Crawler(Http(work))
        val semaphore = crawler.adaptive.semaphore()
        semaphore.acquireBlocking(semaphore.capacity()).use {
            val waiting = launch { crawler.fetch("/a") }
            yield()
            assertEquals(1, semaphore.queueLength())
            waiting.cancel()
            waiting.join()
            assertEquals(0, semaphore.queueLength())
        }
        assertEquals(0, work.runs.get())
        crawler.allBack()
    }
}
