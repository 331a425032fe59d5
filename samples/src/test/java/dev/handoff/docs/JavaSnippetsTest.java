// SPDX-License-Identifier: Apache-2.0
package dev.handoff.docs;

import static dev.handoff.docs.Scenario.expectUsual;
import static dev.handoff.docs.Scenario.failureOf;
import static dev.handoff.docs.Scenario.of;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.handoff.Permits;
import dev.handoff.SemaphoreClosedException;
import dev.handoff.docs.Scenario.Ending;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Runs the Java snippets of README.md and docs/guide (their sources are this package's classes,
 * checked against the documents by {@link DocSnippetsTest}) through success, a failure of the work
 * after the grant, and a failure of the acquisition itself; see {@link Scenario}.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class JavaSnippetsTest {

    static final byte[] ONE_MIB = new byte[1 << 20];

    // ---- README quick start

    @ParameterizedTest
    @EnumSource(Ending.class)
    void readmeBlocking(Ending ending) {
        Fakes.Work work = new Fakes.Work(ending);
        QuickStart q = new QuickStart(Fakes.client(work));
        expectUsual(of(q.inFlight), ending, work, () -> {
            q.upload(ONE_MIB);
            return null;
        });
    }

    @Test
    void readmeBlockingRefusesABodyLargerThanTheCapacityAtOnce() {
        Fakes.Work work = new Fakes.Work(Ending.SUCCESS);
        QuickStart q = new QuickStart(Fakes.client(work));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> q.upload(new byte[(64 << 20) + 1]));
        assertTrue(e.getMessage().contains("67108865"), e.getMessage());
        assertEquals(0, work.runs.get());
        assertEquals(q.inFlight.capacity(), q.inFlight.availablePermits());
    }

    @ParameterizedTest
    @EnumSource(Ending.class)
    void readmeAsync(Ending ending) {
        Fakes.Work work = new Fakes.Work(ending);
        QuickStart q = new QuickStart(Fakes.client(work));
        expectUsual(of(q.inFlight), ending, work, () -> q.uploadAsync(ONE_MIB));
    }

    @ParameterizedTest
    @EnumSource(Ending.class)
    void readmeClamp(Ending ending) {
        Fakes.Work work = new Fakes.Work(ending);
        QuickStart q = new QuickStart(Fakes.client(work));
        expectUsual(of(q.inFlight), ending, work, () -> {
            q.uploadAnySize(ONE_MIB);
            return null;
        });
    }

    @Test
    void readmeClampLetsAnOversizedBodyTakeTheWholeBudget() throws InterruptedException {
        Fakes.Work work = new Fakes.Work(Ending.SUCCESS);
        QuickStart q = new QuickStart(Fakes.client(work));
        q.uploadAnySize(new byte[(64 << 20) + 1]);
        assertEquals(1, work.runs.get());
        assertEquals(q.inFlight.capacity(), q.inFlight.availablePermits());
    }

    // ---- the Java guide

    @ParameterizedTest
    @EnumSource(Ending.class)
    void javaTry(Ending ending) {
        Fakes.Work work = new Fakes.Work(ending);
        JavaFaces f = new JavaFaces(work);
        Scenario.Guarded budget = of(f.budget);
        work.guarded = budget::snippetHolds;
        Throwable failure = failureOf(budget, ending, () -> {
            f.tryFace();
            return null;
        });
        assertFalse(work.ranUnguarded.get());
        switch (ending) {
            case SUCCESS -> assertNull(failure);
            case WORK_FAILS -> assertInstanceOf(Fakes.WorkFailed.class, failure);
            case ACQUISITION_FAILS -> {
                assertNull(failure);
                assertEquals(1, f.shed, "a busy semaphore sheds");
            }
        }
        assertEquals(ending == Ending.ACQUISITION_FAILS ? 0 : 1, work.runs.get());
    }

    @ParameterizedTest
    @EnumSource(Ending.class)
    void javaBlocking(Ending ending) {
        Fakes.Work work = new Fakes.Work(ending);
        JavaFaces f = new JavaFaces(work);
        expectUsual(of(f.budget), ending, work, () -> {
            f.blockingFace();
            return null;
        });
    }

    @ParameterizedTest
    @EnumSource(Ending.class)
    void javaTimed(Ending ending) {
        Fakes.Work work = new Fakes.Work(ending);
        JavaFaces f = new JavaFaces(work);
        expectUsual(of(f.budget), ending, work, f::timedFace);
    }

    @Test
    void javaTimedGivesUpHoldingNothing() throws InterruptedException {
        Fakes.Work work = new Fakes.Work(Ending.SUCCESS);
        JavaFaces f = new JavaFaces(work);
        try (Permits all = f.budget.acquireBlocking(f.budget.capacity())) {
            assertFalse(f.timedFace());
            assertEquals(0, f.budget.queueLength());
        }
        assertEquals(0, work.runs.get());
        assertEquals(f.budget.capacity(), f.budget.availablePermits());
    }

    @ParameterizedTest
    @EnumSource(Ending.class)
    void javaFuture(Ending ending) {
        Fakes.Work work = new Fakes.Work(ending);
        JavaFaces f = new JavaFaces(work);
        expectUsual(of(f.budget), ending, work, f::futureFace);
    }

    @ParameterizedTest
    @EnumSource(Ending.class)
    void javaWithPermitsAsync(Ending ending) {
        Fakes.Work work = new Fakes.Work(ending);
        JavaFaces f = new JavaFaces(work);
        expectUsual(of(f.budget), ending, work, f::withPermitsFace);
    }

    @ParameterizedTest
    @EnumSource(Ending.class)
    void javaCallbackOnAnEventLoop(Ending ending) {
        Fakes.Work work = new Fakes.Work(ending);
        JavaFaces f = new JavaFaces(work);
        ExecutorService loop = Executors.newSingleThreadExecutor();
        try {
            Scenario.Guarded budget = of(f.budget);
            work.guarded = budget::snippetHolds;
            Throwable failure = failureOf(budget, ending, () -> {
                JavaFaces.Send send = f.new Send(loop, 300);
                loop.execute(send::start);
                return send.done;
            });
            switch (ending) {
                case SUCCESS -> assertNull(failure);
                case WORK_FAILS -> assertInstanceOf(Fakes.WorkFailed.class, failure);
                case ACQUISITION_FAILS -> assertNull(failure, "a closed wait completes with 'shutting down'");
            }
            assertFalse(work.ranUnguarded.get());
            assertEquals(ending == Ending.ACQUISITION_FAILS ? 0 : 1, work.runs.get());
        } finally {
            loop.shutdownNow();
        }
    }

    // ---- capacity control

    @ParameterizedTest
    @EnumSource(Ending.class)
    void capacityShedding(Ending ending) {
        Fakes.Work work = new Fakes.Work(ending);
        CapacityControl c = new CapacityControl(work);
        expectUsual(of(c.limit), ending, work, () -> c.handle(new CapacityControl.Request(100)));
    }

    @Test
    void capacitySheddingAnswersTooBusyBeyondTheQueueBound() throws Exception {
        Fakes.Work work = new Fakes.Work(Ending.SUCCESS);
        CapacityControl c = new CapacityControl(work);
        List<CompletableFuture<Permits>> waiting = new ArrayList<>();
        try (Permits all = c.limit.acquireBlocking(512)) {
            for (int i = 0; i < 8; i++) {
                waiting.add(c.limit.acquireAsync(512)); // 4,096 permits' worth waiting: the bound
            }
            assertEquals(CapacityControl.Reply.TOO_BUSY, c.handle(new CapacityControl.Request(1)));
            assertEquals(8, c.limit.queueLength(), "the refused request never queued");
        }
        for (CompletableFuture<Permits> w : waiting) {
            w.get(1, TimeUnit.MINUTES).release();
        }
        assertEquals(0, work.runs.get());
        assertEquals(512, c.limit.availablePermits());
    }

    @ParameterizedTest
    @EnumSource(Ending.class)
    void capacityUpTo(Ending ending) {
        Fakes.Work work = new Fakes.Work(ending);
        CapacityControl c = new CapacityControl(work);
        expectUsual(of(c.limit), ending, work, c::writeSome);
        if (ending == Ending.SUCCESS) {
            assertEquals(511, c.lastBatch, "all that was free (the bystander holds one)");
        }
    }

    @Test
    void theUpToExampleAsksForAMinimumWithinTheCapacity() throws InterruptedException {
        CapacityControl c = new CapacityControl(new Fakes.Work(Ending.SUCCESS));
        assertTrue(c.limit.capacity() >= 64, "acquireUpTo's minimum must fit the capacity: " + c.limit);
        assertEquals(512, c.writeSome());
    }

    @Test
    void capacityResize() throws InterruptedException {
        CapacityControl c = new CapacityControl(new Fakes.Work(Ending.SUCCESS));
        Permits held = c.limit.acquireBlocking(500);
        c.downstreamIsStruggling();
        assertEquals(384, c.limit.capacity());
        assertEquals(0, c.limit.availablePermits(), "in debt: 500 held against 384");
        CompletableFuture<Permits> next = c.limit.acquireAsync(300);
        held.release();                                  // pays the debt of 116, then serves the queue
        assertTrue(next.isDone());
        c.downstreamRecovered();
        assertEquals(512, c.limit.capacity());
        next.join().release();
        assertEquals(512, c.limit.availablePermits());
    }

    @Test
    void capacityDrain() throws Exception {
        CapacityControl c = new CapacityControl(new Fakes.Work(Ending.SUCCESS));
        Permits held = c.limit.acquireBlocking(512);
        CompletableFuture<Permits> waiter = c.limit.acquireAsync(1);
        CompletableFuture<Void> stopped = CompletableFuture.runAsync(() -> {
            try {
                c.shutDown();
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        Throwable refused = assertThrows(Exception.class, () -> waiter.get(1, TimeUnit.MINUTES));
        assertInstanceOf(SemaphoreClosedException.class, Scenario.unwrap(refused));
        assertFalse(stopped.isDone(), "the drain waits for the holder");
        held.release();
        stopped.get(1, TimeUnit.MINUTES);
        assertTrue(c.limit.isClosed());
    }

    // ---- locks

    @ParameterizedTest
    @EnumSource(Ending.class)
    void mutexDeposit(Ending ending) {
        Fakes.Work work = new Fakes.Work(ending);
        Locks.Account account = new Locks(work).new Account();
        expectUsual(of(account.mutex), ending, work, () -> {
            account.deposit(5);
            return null;
        });
    }

    @ParameterizedTest
    @EnumSource(Ending.class)
    void mutexSaveAsync(Ending ending) {
        Fakes.Work work = new Fakes.Work(ending);
        Locks.Account account = new Locks(work).new Account();
        expectUsual(of(account.mutex), ending, work, account::saveAsync);
    }

    @ParameterizedTest
    @EnumSource(Ending.class)
    void rwLockFind(Ending ending) {
        Fakes.Work work = new Fakes.Work(Ending.SUCCESS);
        Locks.Catalog catalog = new Locks(work).new Catalog();
        Throwable failure = failureOf(of(catalog.lock, true), ending, () -> catalog.find("sku-1"));
        if (ending == Ending.ACQUISITION_FAILS) {
            assertInstanceOf(SemaphoreClosedException.class, failure);
        } else {
            assertNull(failure); // a map lookup cannot fail after the grant
        }
    }

    @ParameterizedTest
    @EnumSource(Ending.class)
    void rwLockReplaceAndDowngrade(Ending ending) {
        Fakes.Work work = new Fakes.Work(ending);
        Locks.Catalog catalog = new Locks(work).new Catalog();
        expectUsual(of(catalog.lock, false), ending, work, () -> catalog.replace(new Locks.Product("sku-1", 7)));
    }
}
