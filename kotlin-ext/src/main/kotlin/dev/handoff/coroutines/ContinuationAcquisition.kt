// SPDX-License-Identifier: Apache-2.0
package dev.handoff.coroutines

import dev.handoff.Acquisition
import java.lang.invoke.MethodHandle
import java.lang.invoke.MethodHandles
import java.lang.invoke.MethodType
import java.util.concurrent.Executor
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater
import kotlin.coroutines.Continuation
import kotlin.coroutines.ContinuationInterceptor
import kotlin.coroutines.CoroutineContext
import kotlin.coroutines.intrinsics.suspendCoroutineUninterceptedOrReturn
import kotlin.coroutines.resumeWithException
import kotlinx.coroutines.CancellableContinuation
import kotlinx.coroutines.CoroutineDispatcher
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.ExperimentalCoroutinesApi
import kotlinx.coroutines.TimeoutCancellationException
import kotlinx.coroutines.suspendCancellableCoroutine

/*
 * Implementation notes
 * ====================
 *
 * A suspended acquisition is one object of this class: it IS the core's queue node (a subclass of
 * dev.handoff.Acquisition, started with Semaphore.startAcquisition, Mutex.startLock, ...), so the
 * slow path allocates only it and what kotlinx itself needs for a cancellable suspension (the
 * continuation, its handler wrapper and the resumed-state record). (A FairShareSemaphore queues
 * a node of its own, whose party this object is, and counts its provisional grants per key: see
 * "Provisional grants" in its notes.) It plays five parts:
 *
 *   - the queue node and its waker: claim() and wake();
 *   - the continuation's cancellation handler, `(Throwable?) -> Unit`, which withdraws the wait, or
 *     gives back a grant that the cancellation kept from being delivered;
 *   - the `onCancellation` of a directly resumed grant, `(Throwable, Unit, CoroutineContext) -> Unit`,
 *     which gives the permits back if the coroutine is cancelled before it uses them;
 *   - a Runnable: the grant's resumption, run on the coroutine's own dispatcher;
 *   - an Executor: where the wake-ups caused by its withdrawal run (the coroutine's dispatcher).
 *
 * Public kotlinx API only (no opt-in to kotlinx internals): kotlinx-coroutines-core 1.9.0 or newer,
 * the first with the three-argument `resume(value, onCancellation)`. An older kotlinx on the
 * classpath is refused loudly at the first suspending call (see KotlinxSupport), never a hang.
 * One call is public but experimental, `CoroutineDispatcher.resumeUndispatched` (see "Where a grant
 * resumes"); if a kotlinx ever lacks it, every grant takes the direct resumption instead.
 *
 * Exactly one of grant, close and cancel wins
 * -------------------------------------------
 * The core decides a grant under its lock and asks claim() first. claim() reads
 * `continuation.isActive`: false iff the continuation was already cancelled (it cannot have been
 * resumed: only wake() resumes it). Then claim() declines, the core counts the acquisition as
 * cancelled and hands its permits on in the same release; nothing is held by a party that cannot
 * use it. Otherwise the grant is ours; wake(), called once the core's lock is released, resumes the
 * coroutine (next section). A cancellation that lands after claim() gives the permits back exactly
 * once, and before either the cancelling call or the releasing call returns: neither the thread
 * that cancelled (job.cancel(), withTimeout) nor the one whose release granted them can see them
 * "granted to a cancelled coroutine, on their way back" afterwards (Lincheck's stress mode found
 * both: a cancelled acquire followed by availablePermits() 0 on its own thread when only the
 * releaser gave back, a readUnlock followed by a failing tryReadLock on its own thread when only
 * the canceller did). `phase` (a CAS to HANDLED, from whatever it was) says who gives back; it
 * moves to GIVEN once the permits are back, and a party that finds HANDLED waits for GIVEN (see
 * awaitGiven: the other party is inside its give-back, a release):
 *   - the cancellation handler, whenever it finds the node granted: kotlinx calls it only for a
 *     value that will not be delivered — a cancellation before wake() resumed the continuation (it
 *     may not have run yet at all: the releaser is between its unlock and wake()), or a resumption
 *     that the coroutine's Job cancelled before the coroutine ran again (prompt cancellation);
 *   - the `onCancellation` of a direct `resume(Unit, onCancellation = this)` (`phase` RESUMING, set
 *     by wake() just before it resumes), which kotlinx calls for an undelivered value too;
 *   - await(), for a grant that kotlinx dropped before the coroutine suspended (see "A grant
 *     that arrives before the suspension").
 * wake() dispatches if it reads `phase` OPEN, and leaves it OPEN: a handler that moves it to
 * HANDLED after that read gives the permits back, and kotlinx ignores the dispatched resumption
 * of the cancelled continuation, so the dispatch decision needs no CAS (one fence less per
 * suspension). Otherwise it resumes directly if it moves `phase` from STARTING (a grant inside
 * start()) or OPEN to RESUMING, and resumes nothing if the handler came first (HANDLED: the
 * permits are back already; it waits for GIVEN as every losing party does). On the dispatched path
 * run()'s undispatched resumption runs the coroutine at once, so the losses are a cancellation
 * before run() (kotlinx ignores the resumption and calls the handler) and a run() before the
 * coroutine suspended. The coroutine then throws CancellationException: a cancelled caller ends
 * holding nothing, whichever came first.
 *
 * Provisional grants
 * ------------------
 * Permits have no owner, so another thread may release permits it does not hold. While a grant is
 * between claim() and its delivery, a cancellation can still turn it down, and such a release could
 * not be answered right for both outcomes. So this node asks the core for provisional grants
 * (provisionalGrant): the permits count as held by nobody until wake() confirms the grant, just
 * before it resumes the coroutine directly or dispatches run() (confirmGrant), or the give-back of
 * a cancellation undoes it (undoGrant, in giveBackNow, after forgetGrant). A release that needs
 * those permits waits for that decision in the core. A give-back of a grant already confirmed is a
 * release; if another caller released those permits meanwhile, the over-release goes to the
 * thread's uncaught-exception handler, and the coroutine still ends with CancellationException.
 * That window — a cancellation after wake() confirmed and before kotlinx resumed the coroutine
 * (or ran run()) — stays open: the confirmation cannot be one step with kotlinx's resumption in
 * public API, and it cannot come after it, since a coroutine resumed in place (Unconfined, or the
 * releasing thread's own resumption) may release at once, and that release must not wait for its
 * own grant. Under the prompt cancellation kotlinx gives every cancellable suspension such a grant
 * was delivered and then cancelled; FairShareSuspendingLincheckTest's notes say what the model
 * checker found there. On a FairShareSemaphore the node is the party of the fair share's own
 * node, which keeps the provisional grants per key (see its notes); the protocol is the same.
 *
 * Where a grant resumes
 * ---------------------
 * A cancellable suspension (public API) attaches a handle to the coroutine's Job, and kotlinx
 * detaches it inside resume(). Resumed on the releasing thread, that detach writes the waiting
 * coroutine's Job (its handler list) from the other core, and the coroutine reads it back on its
 * own: a cache-line round trip between the cores per suspension, which made a suspension about a
 * quarter slower than kotlinx's own Semaphore (whose internal reusable continuation keeps its
 * handle across suspensions). So when the coroutine's dispatcher wants a dispatch (for
 * Dispatchers.Default, always), wake() dispatches this node instead, and run() — on that
 * dispatcher — resumes with `resumeUndispatched`: the detach and the coroutine's continuation run
 * on the thread that runs the coroutine, at the cost of the same single dispatch kotlinx's
 * resume() would have made. A grant settled inside start() (on the caller's thread, before the
 * coroutine suspends), a dispatcher that needs no dispatch (Unconfined) or no dispatcher take the
 * direct resume(Unit, onCancellation) instead; after a cancellation handler that ran first,
 * nothing is resumed. A
 * dispatcher that refuses the task (a closed executor) gets it run on Dispatchers.IO, as kotlinx
 * does with a resumption its executor refuses.
 *
 * Where a withdrawal runs
 * -----------------------
 * The cancellation handler runs on the thread that cancels (for withTimeout, kotlinx's single
 * shared timer thread). It withdraws the wait there at once — leaving the queue and handing a
 * cancelled head's partial permits on are short steps under the core's lock, and doing them at
 * once keeps the permits exact: when the cancelled coroutine's Job completes, its node is gone —
 * but the wake-ups those permits cause (other waiters' wakers, which may be slow user callbacks)
 * go to this coroutine's own dispatcher through Acquisition.cancel(Executor), this object being
 * the Executor. A slow waker therefore never delays kotlinx's timer thread. If the dispatcher
 * needs no dispatch (Unconfined) or its dispatch() throws, the wake-ups run on the spot, so none is
 * lost (kotlinx's own executor dispatchers do not throw for a closed executor: they move the task
 * to Dispatchers.IO). Threads parked in a blocking acquire are unparked by the core at once either
 * way. The price: the wake-ups wait behind whatever that dispatcher runs first, so a cancelling
 * thread that is the dispatcher's only thread and then blocks on the same lock (runBlocking on it)
 * waits for itself — kotlinx's warning against runBlocking on a dispatcher's own thread applies.
 * The give-back of a grant that lost to a cancellation runs at once where kotlinx reports it, so
 * that the permits are back before the cancelling call returns and before the cancelled
 * coroutine's Job completes: on the cancelling thread (the handler), when the cancellation landed
 * after claim() but before the resumption — between the releaser's unlock and its wake(), or
 * between a dispatched grant and its run() — or on the coroutine's dispatcher at its resumption
 * (prompt cancellation), or where a grant settled inside start() is dropped (onCancellation, on the
 * caller's thread). The handler's give-back is a release whose wake-ups go to this coroutine's
 * dispatcher, as a withdrawal's do, with the same exceptions (Semaphore.release(n, Executor) and
 * the unlock overloads of Mutex and RwLock): the permits are handed on at once, on the cancelling
 * thread, but the next waiters' wakers do not run there. The handler does so wherever kotlinx
 * calls it (on a prompt cancellation, the wake-ups are dispatched once more to the same dispatcher);
 * the give-backs of onCancellation and await() run their wake-ups where they are (RUN_HERE): on
 * the releasing thread or the coroutine's own.
 *
 * A grant that arrives before the suspension
 * ------------------------------------------
 * A grant dispatched after start() returned may have its run() execute on another thread before
 * this coroutine has suspended: between the end of the suspendCancellableCoroutine block and
 * kotlinx's own suspension (its getResult). kotlinx then keeps the value for getResult, and
 * getResult drops it if the coroutine's Job was cancelled in the meantime — calling no handler,
 * because an undispatched resumption keeps none (the cancellation handler was dropped with the
 * record it would have lived in). Nobody outside can time that window, and no public kotlinx call
 * tells whether the continuation has suspended yet. So await() runs the suspension as a plain call
 * with its caller's continuation (suspendOn, through SUSPEND_ON: no state machine, no allocation):
 * kotlinx's throw from getResult then reaches await() at once, and await() gives a granted node
 * back if it moves `phase` from OPEN or RESUMING to HANDLED — the same CAS the cancellation
 * handler and onCancellation take, so only one of them gives back (on the direct path kotlinx
 * also reports the drop to onCancellation, which then finds the grant given back). The same
 * holds for a grant claimed by another thread while the block runs, whose wake-up has not come
 * yet, and a cancellation before the suspension: the handler (installed for such a node too, see
 * "Settling inside start()") normally gives that grant back first; if await() sees the throw
 * first, the CAS makes it the one that gives back, and the handler then waits.
 *
 * Settling inside start()
 * -----------------------
 * The core may settle the acquisition before start() returns (a grant at once, closed, failed),
 * on the calling thread, inside the suspendCancellableCoroutine block: an ordinary resumption
 * before suspension for kotlinx. The cancellation handler is installed in every case, after
 * start(); kotlinx runs it at once if the coroutine was cancelled in the meantime, keeps it with a
 * value resumed before the suspension (and calls it if the Job is cancelled before the coroutine
 * runs on), and lets it find nothing to do for a closed or failed node. Whether the node is still
 * waiting is not the test: another thread may claim it after start() queued it and before the
 * block gets here, and its wake-up may come much later (the wake-ups of one release run in FIFO
 * order, after user wakers) or stop between its CAS to RESUMING and its resume() (a descheduled
 * releaser, with a dispatcher that needs no dispatch, as under Lincheck); a cancellation in
 * between reaches only the handler (or, before the coroutine suspends, await()), so without the
 * handler the grant was lost (dispatched: the wake-up's resumption is ignored) or came back only
 * in the releaser's late onCancellation, after the cancelling call had returned. Until
 * 2026-11-25 the handler was installed only for a pending node; GrantResumptionTest plays these
 * orders. A grant settled inside start() on this thread then carries both the handler and the
 * direct resumption's onCancellation: the CAS to HANDLED makes one of them give back.
 *
 * Threads
 * -------
 * `continuation` is written before start() publishes this node to the core (under its lock), so
 * claim() and wake() on other threads see it.
 */

/**
 * The queue node of one suspended acquisition on a face of type [F] (a Semaphore, Mutex or RwLock;
 * on a FairShareSemaphore, the party of the fair share's own node, which answers for it): see the
 * implementation notes above. Subclasses say how to start it on their face and how to give back
 * what a cancelled coroutine was granted; [await] does the rest. The node keeps no reference to its
 * face: [start] gets it, and afterwards the core knows it ([face]). One instance per suspension;
 * not reusable.
 */
internal abstract class ContinuationAcquisition<F : Any> :
    Acquisition(),
    (Throwable?) -> Unit,
    (Throwable, Unit, CoroutineContext) -> Unit,
    Executor,
    Runnable {

    /** Set once at the start of [await], before the core can see this node. */
    private lateinit var continuation: CancellableContinuation<Unit>

    /**
     * Who delivers the grant, and whether it was given back after a cancellation kept it from being
     * delivered: [PHASE_OPEN] (also while a dispatched [run] is on its way), [PHASE_STARTING]
     * (while [start] runs on the caller's thread, before the handler exists), [PHASE_RESUMING] (set
     * by [wake] before a direct resumption), [PHASE_HANDLED] (being given back by whoever set it)
     * or [PHASE_GIVEN] (given back). See the notes above.
     */
    @Volatile @JvmField internal var phase: Int = PHASE_OPEN

    /**
     * Starts this node on [face] with [permits], e.g. `Adapters.startAcquisition(face, permits,
     * this)`.
     */
    protected abstract fun start(face: F, permits: Long)

    /** The face this node was started on: valid once [start] has run (the core keeps it). */
    protected val face: F
        @Suppress("UNCHECKED_CAST") // start(face, ...) started it on an F
        get() = startedOn() as F

    /**
     * Returns the permits of a confirmed grant that the cancelled coroutine never got to use, at
     * once, as a release of them; the wake-ups of the waiters they complete run on [wakes] (e.g.
     * `face.release(permits(), wakes)`). A grant still provisional is undone by the core instead
     * (see "Provisional grants"), after [forgetGrant].
     */
    protected abstract fun giveBack(wakes: Executor)

    /** Before a grant the coroutine never used goes back: undoes what [claimed] recorded. */
    protected open fun forgetGrant() {}

    /** The exception for a closed semaphore, naming the call. */
    protected abstract fun closedException(): Throwable

    /**
     * Runs in [claim] once the grant is this coroutine's, under the core's lock and before any
     * waker runs: a short non-blocking step (a field store) that must not call back into the core.
     * The kotlinx mutex view records its owner token here, as kotlinx does at its own grant.
     */
    protected open fun claimed() {}

    /**
     * Suspends until the acquisition of [permits] on [face] started by [start] is granted
     * (returns), closed (throws what [closedException] makes), failed (throws its [failure]) or
     * cancelled with the coroutine (throws CancellationException; nothing is held). Arguments must
     * have been checked: an exception from [start] would leave the continuation behind.
     *
     * Call it as `await<Unit>(face, n)`. The type parameter is only there for the bytecode (see
     * [suspendOn]); the result is always `Unit`. A grant that kotlinx drops before the coroutine
     * suspends is given back here (see "A grant that arrives before the suspension").
     */
    suspend fun <T> await(face: F, permits: Long): T =
        suspendCoroutineUninterceptedOrReturn { caller ->
            KotlinxSupport.check()
            try {
                // invokeExact with these exact static types: (ContinuationAcquisition, Any, long,
                // Continuation) -> Any?
                SUSPEND_ON.invokeExact(
                    this as ContinuationAcquisition<*>,
                    face as Any,
                    permits,
                    caller as Continuation<*>,
                )
            } catch (dropped: Throwable) {
                // kotlinx threw at once: a grant it dropped for a cancellation before the coroutine
                // suspended is given back here (see "A grant that arrives before the suspension").
                if (isGranted) {
                    takeBack(RUN_HERE) // on this coroutine's own thread
                }
                throw dropped
            }
        }

    /**
     * The suspension itself, called by [await] with its caller's continuation (see [SUSPEND_ON]),
     * so that a throw from kotlinx before the coroutine suspends reaches [await] and no state
     * machine is allocated. The type parameter is only there for the bytecode: inlining
     * `suspendCancellableCoroutine<Unit>` across modules makes the compiler coerce the result to
     * `Unit` and give this function a state machine (one more allocation per suspension); with an
     * erased `T` it stays a plain tail call. Protected, not private, only so that [SUSPEND_ON]'s
     * lookup (in the companion, another class on the JVM) can find it; subclasses do not call it.
     */
    protected suspend fun <T> suspendOn(face: F, permits: Long): T =
        suspendCancellableCoroutine<T> { cont ->
            @Suppress("UNCHECKED_CAST") // T is Unit at every call site; the value resumed is Unit
            continuation = cont as CancellableContinuation<Unit>
            if (!cont.isActive) {
                return@suspendCancellableCoroutine // cancelled already: never queue, throw at once
            }
            // Before the core can see this node, so that a grant inside start() resumes directly. A
            // release store: start() publishes the node afterwards (under the core's lock or by its
            // tail CAS), and whoever finds it there sees STARTING; a full volatile write would add
            // a
            // fence per suspension for nothing.
            PHASE.lazySet(this, PHASE_STARTING)
            try {
                start(face, permits)
            } catch (refused: Throwable) { // shed (SemaphoreRejectedException): nothing queued
                cont.resumeWithException(refused)
                return@suspendCancellableCoroutine
            } finally {
                PHASE.compareAndSet(
                    this,
                    PHASE_STARTING,
                    PHASE_OPEN,
                ) // a CAS: never overwrites what another party set
            }
            cont.invokeOnCancellation(this) // always: see "Settling inside start()"
        }

    /**
     * A grant made while queued stays provisional until [wake] delivers it or a cancellation undoes
     * it.
     */
    final override fun provisionalGrant(): Boolean = true

    /**
     * Under the core's lock: take the grant iff the coroutine is not cancelled. One volatile read.
     */
    final override fun claim(): Boolean {
        if (!continuation.isActive) {
            return false
        }
        claimed()
        return true
    }

    /** After the core's lock: run the coroutine (granted), or fail it (closed, failed). */
    final override fun wake() {
        when {
            isGranted ->
                if (!KotlinxSupport.undispatchedResume || !dispatchedToOwnThread()) {
                    resumeDirectly()
                }
            isClosed -> continuation.resumeWithException(closedException())
            else ->
                continuation.resumeWithException(
                    failure()
                        ?: IllegalStateException(
                            "$this: woken without a grant, a close or a failure"
                        )
                )
        }
    }

    /**
     * Dispatches [run] to the coroutine's dispatcher if it wants a dispatch and [phase] is OPEN (a
     * read, not a CAS: see the notes above); returns false (nothing dispatched) otherwise. A
     * dispatcher that refuses the task has it run on Dispatchers.IO, as kotlinx does.
     */
    private fun dispatchedToOwnThread(): Boolean {
        val context = continuation.context
        val dispatcher = context[ContinuationInterceptor] as? CoroutineDispatcher ?: return false
        val needed =
            try {
                dispatcher.isDispatchNeeded(context)
            } catch (failed: Throwable) {
                false
            }
        if (!needed || phase != PHASE_OPEN) {
            return false
        }
        confirmGrant() // delivered from here on: a cancellation before run() gives it back as a
        // release
        try {
            dispatcher.dispatch(context, this)
        } catch (refused: Throwable) { // a closed executor
            Dispatchers.IO.dispatch(context, this)
        }
        return true
    }

    /**
     * Resumes the granted coroutine here with `resume(Unit, onCancellation)`, after moving [phase]
     * from OPEN or STARTING to RESUMING; resumes nothing if the cancellation handler came first
     * (the continuation is cancelled already), but returns only once the handler's give-back is
     * done.
     */
    private fun resumeDirectly() {
        if (movedTo(PHASE_RESUMING)) {
            confirmGrant() // before the coroutine can run (and release) on this thread
            val onCancellation: (Throwable, Unit, CoroutineContext) -> Unit = this
            continuation.resume(Unit, onCancellation)
        }
    }

    /**
     * On the coroutine's dispatcher, after [wake] dispatched it: resumes the granted coroutine on
     * this thread. Ignored by kotlinx if a cancellation came first (the cancellation handler then
     * gave the permits back).
     */
    @OptIn(ExperimentalCoroutinesApi::class)
    final override fun run() {
        val dispatcher = continuation.context[ContinuationInterceptor] as CoroutineDispatcher
        with(continuation) { dispatcher.resumeUndispatched(Unit) }
    }

    /**
     * The continuation's cancellation handler: withdraws the wait at once; the wake-ups of the
     * waiters that the withdrawn permits complete run on this coroutine's dispatcher (see
     * [execute]), not on the cancelling thread. If the grant won the race, kotlinx calls this only
     * because the grant will not be delivered: it is given back here, unless [await] or the direct
     * resumption's onCancellation does (the CAS to HANDLED decides; then this waits until it is
     * done), so the permits are back before the cancelling call returns. A close or failure that
     * won holds nothing.
     */
    final override fun invoke(cause: Throwable?) {
        // withTimeout's cancellation: the semaphore's WaitListener hears "timed out".
        if (
            isPending &&
                (if (cause is TimeoutCancellationException) cancelTimedOut(this) else cancel(this))
        ) {
            return
        }
        if (isGranted) {
            takeBack(
                this
            ) // the wake-ups it causes run on this coroutine's dispatcher, as a withdrawal's do
        }
    }

    /**
     * Where the wake-ups of a withdrawal or of the handler's give-back run: this coroutine's
     * dispatcher.
     */
    final override fun execute(command: Runnable) {
        runOnOwnDispatcher(continuation.context, command)
    }

    /**
     * `onCancellation` of a direct resumption: kotlinx calls it iff the value was not delivered, so
     * the permits go back at once, unless the cancellation handler (which kotlinx may call too,
     * before or after this) does: the CAS to HANDLED decides, and this returns only once they are
     * back, so the release whose wake-up called it returns after that too.
     */
    final override fun invoke(cause: Throwable, value: Unit, context: CoroutineContext) {
        takeBack(RUN_HERE) // in the releasing call's resume(), or on this coroutine's dispatcher
    }

    /**
     * For a grant that will not be delivered: gives it back unless another party already does (the
     * CAS to HANDLED decides), and returns only once the permits are back either way. The wake-ups
     * that the give-back causes run on [wakes].
     */
    private fun takeBack(wakes: Executor) {
        if (movedTo(PHASE_HANDLED)) {
            giveBackNow(wakes)
        }
    }

    /**
     * Moves [phase] to [next] (RESUMING or HANDLED) unless a party already gives the grant back
     * (HANDLED or GIVEN): returns true if it moved it, false once that give-back is done.
     */
    private fun movedTo(next: Int): Boolean {
        while (true) {
            val p = phase
            if (p == PHASE_HANDLED || p == PHASE_GIVEN) {
                awaitGiven()
                return false
            }
            if (PHASE.compareAndSet(this, p, next)) {
                return true
            }
        }
    }

    /**
     * After winning the CAS to HANDLED: gives the grant back, then publishes GIVEN. A provisional
     * grant is undone (it was never held); a confirmed one is released. If that release finds the
     * permits gone — another caller released permits it did not hold meanwhile — the over-release
     * goes to this thread's uncaught-exception handler: the cancelled coroutine still ends with its
     * CancellationException, holding nothing.
     */
    private fun giveBackNow(wakes: Executor) {
        try {
            forgetGrant()
            if (!undoGrant(wakes)) {
                try {
                    giveBack(wakes)
                } catch (overRelease: IllegalStateException) {
                    val me = Thread.currentThread()
                    me.uncaughtExceptionHandler?.uncaughtException(
                        me,
                        IllegalStateException(
                            "$this: the permits of a grant its cancelled coroutine never used had been released " +
                                "by another caller meanwhile (an over-release)",
                            overRelease,
                        ),
                    )
                }
            }
        } finally {
            phase = PHASE_GIVEN
        }
    }

    /**
     * Waits until the party that won the CAS to HANDLED has given the grant back: it is inside a
     * release (a short locked step, then the wake-ups of the waiters that the permits complete).
     * Polls, then yields (the other thread may have been descheduled); gives up after
     * [GIVE_BACK_PATIENCE_NANOS], so that a waker of those waiters that blocks until this thread
     * moves on delays it instead of deadlocking it (the permits still come back; only the promise
     * that they are back when this call returns is lost then).
     */
    private fun awaitGiven() {
        var spins = 0
        var deadline = 0L
        while (phase != PHASE_GIVEN) {
            if (spins < GIVE_BACK_SPINS) {
                spins++
                Thread.onSpinWait()
                continue
            }
            val now = System.nanoTime()
            if (deadline == 0L) {
                deadline = now + GIVE_BACK_PATIENCE_NANOS
            } else if (now - deadline > 0) {
                return
            }
            Thread.yield()
        }
    }

    internal companion object {
        /**
         * [suspendOn] as the plain JVM method it is: (node, face, permits, continuation) ->
         * COROUTINE_SUSPENDED or the result. Calling it with [await]'s own continuation keeps
         * [await] free of a state machine; a method handle in a static final field passes `permits`
         * as a primitive (a callable reference cast to a FunctionN would box it: 24 bytes per
         * suspension whenever the JIT fails to eliminate the box) and is inlined like a direct
         * call.
         */
        @JvmField
        val SUSPEND_ON: MethodHandle =
            MethodHandles.lookup()
                .findVirtual(
                    ContinuationAcquisition::class.java,
                    "suspendOn",
                    MethodType.methodType(
                        Any::class.java,
                        Any::class.java,
                        Long::class.javaPrimitiveType,
                        Continuation::class.java,
                    ),
                )

        const val PHASE_OPEN: Int = 0
        const val PHASE_STARTING: Int = 1
        const val PHASE_HANDLED: Int = 2
        const val PHASE_RESUMING: Int = 3
        const val PHASE_GIVEN: Int = 4

        /**
         * Runs the wake-ups of a give-back on the thread that gives back: where the grant was
         * dropped.
         */
        val RUN_HERE: Executor = Executor { it.run() }

        /**
         * [awaitGiven] polls this many times first: a give-back is usually well under a
         * microsecond.
         */
        const val GIVE_BACK_SPINS: Int = 256

        /** [awaitGiven] then yields for at most this long (200 ms), then stops waiting. */
        const val GIVE_BACK_PATIENCE_NANOS: Long = 200_000_000L

        val PHASE: AtomicIntegerFieldUpdater<ContinuationAcquisition<*>> =
            AtomicIntegerFieldUpdater.newUpdater(ContinuationAcquisition::class.java, "phase")

        /**
         * Runs [task] on the dispatcher of [context] if it has one that wants to dispatch, so that
         * the permits a cancellation frees, and the wakers they run, never land on the thread that
         * cancelled (kotlinx's timer thread for withTimeout). Runs it here otherwise, and if the
         * dispatcher refuses it (a closed executor), so that nothing is ever lost.
         */
        fun runOnOwnDispatcher(context: CoroutineContext, task: Runnable) {
            val dispatcher = context[ContinuationInterceptor] as? CoroutineDispatcher
            if (dispatcher != null) {
                val dispatched =
                    try {
                        if (dispatcher.isDispatchNeeded(context)) {
                            dispatcher.dispatch(context, task)
                            true
                        } else {
                            false
                        }
                    } catch (refused: Throwable) {
                        false
                    }
                if (dispatched) {
                    return
                }
            }
            task.run()
        }
    }
}

/**
 * The kotlinx-coroutines version check: handoff-kotlin uses the public three-argument
 * `CancellableContinuation.resume(value, onCancellation)` of kotlinx-coroutines-core 1.9.0. With an
 * older kotlinx on the classpath (Maven's nearest-wins may pick an application's own), the first
 * suspending call fails with this message instead of hanging.
 */
internal object KotlinxSupport {
    const val OLDEST_SUPPORTED: String = "1.9.0"

    private val supported: Boolean =
        continuationHas("resume", Any::class.java, Function3::class.java)

    /**
     * Whether the public, experimental `CancellableContinuation.resumeUndispatched` is there (it is
     * in every kotlinx since 1.0; checked so that a future kotlinx without it degrades to the
     * direct resumption instead of failing a grant).
     */
    val undispatchedResume: Boolean =
        continuationHas("resumeUndispatched", CoroutineDispatcher::class.java, Any::class.java)

    /**
     * Whether the kotlinx on the classpath has the public `CancellableContinuation` method [name].
     */
    private fun continuationHas(name: String, vararg parameterTypes: Class<*>): Boolean =
        try {
            CancellableContinuation::class.java.getMethod(name, *parameterTypes)
            true
        } catch (missing: NoSuchMethodException) {
            false
        }

    fun check() {
        if (!supported) {
            throw UnsupportedOperationException(
                "handoff-kotlin needs kotlinx-coroutines-core $OLDEST_SUPPORTED or newer, but the classpath has " +
                    (CancellableContinuation::class.java.`package`?.implementationVersion
                        ?: "an older version") +
                    " (CancellableContinuation.resume(value, onCancellation: (cause, value, context) -> Unit) is " +
                    "missing); upgrade org.jetbrains.kotlinx:kotlinx-coroutines-core"
            )
        }
    }
}
