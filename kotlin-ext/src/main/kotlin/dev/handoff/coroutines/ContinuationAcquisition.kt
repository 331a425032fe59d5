// SPDX-License-Identifier: Apache-2.0
package dev.handoff.coroutines

import dev.handoff.Acquisition
import kotlinx.coroutines.CancellableContinuation
import kotlinx.coroutines.CoroutineDispatcher
import kotlinx.coroutines.ExperimentalCoroutinesApi
import kotlinx.coroutines.TimeoutCancellationException
import kotlinx.coroutines.suspendCancellableCoroutine
import kotlin.coroutines.ContinuationInterceptor
import kotlin.coroutines.CoroutineContext
import kotlin.coroutines.resumeWithException
import java.util.concurrent.Executor
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater

/*
 * Implementation notes
 * ====================
 *
 * A suspended acquisition is one object of this class: it IS the core's queue node (a subclass of
 * dev.handoff.Acquisition, started with Semaphore.startAcquisition, Mutex.startLock, ...), so the
 * slow path allocates only it and what kotlinx itself needs for a cancellable suspension (the
 * continuation, its handler wrapper and the resumed-state record). It plays five parts:
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
 * coroutine (next section). A cancellation that lands after claim() gives the permits back, and
 * exactly once (giveBackOnce(), a CAS, since two kotlinx callbacks can report it):
 *   - before the resumption: kotlinx calls the cancellation handler (the continuation was cancelled
 *     while it waited); its withdrawal fails because the wait was granted, so it gives back. The
 *     resumption that follows is ignored by kotlinx;
 *   - after a direct `resume(Unit, onCancellation = this)` but before the coroutine runs again
 *     (prompt cancellation), or before it (resume then rejects the value): kotlinx calls that
 *     onCancellation, which gives back;
 *   - the undispatched resumption on the coroutine's dispatcher runs the coroutine at once, so
 *     there is no "resumed but not running yet" window on that path.
 * The coroutine then throws CancellationException: a cancelled caller ends holding nothing,
 * whichever came first.
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
 * coroutine suspends), a dispatcher that needs no dispatch (Unconfined), no dispatcher, or one
 * that refuses the task take the direct resume(Unit, onCancellation) instead.
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
 * needs no dispatch (Unconfined) or refuses the task (a closed executor), the wake-ups run on the
 * spot, so none is lost.
 * The give-back of a grant that lost to a cancellation (onCancellation) runs where kotlinx calls
 * it: inside resume() on the releasing thread, on the coroutine's dispatcher at its resumption,
 * or — when the cancellation lands between the resume and the dispatch — on the cancelling
 * thread; in that last, narrow case the release runs the next waiters' wakers there.
 *
 * Settling inside start()
 * -----------------------
 * The core may settle the acquisition before start() returns (a grant at once, closed, failed),
 * on the calling thread, inside the suspendCancellableCoroutine block: an ordinary resumption
 * before suspension for kotlinx. The cancellation handler is installed only if the acquisition may
 * still be waiting (a lock-free read of its state: no lock is taken on this path); kotlinx runs it
 * at once if the coroutine was cancelled in the meantime.
 *
 * Threads
 * -------
 * `continuation` is written before start() publishes this node to the core (under its lock), so
 * claim() and wake() on other threads see it.
 */

/**
 * The queue node of one suspended acquisition: see the implementation notes above. Subclasses say
 * how to start it on their face and how to give back what a cancelled coroutine was granted;
 * [await] does the rest. One instance per suspension; not reusable.
 */
internal abstract class ContinuationAcquisition :
    Acquisition(),
    (Throwable?) -> Unit,
    (Throwable, Unit, CoroutineContext) -> Unit,
    Executor,
    Runnable {

    /** Set once at the start of [await], before the core can see this node. */
    private lateinit var continuation: CancellableContinuation<Unit>

    /**
     * True while [start] runs on the caller's thread: a grant settled inside it resumes directly
     * (the coroutine has not suspended yet, so kotlinx simply returns). A hint only: another thread
     * that reads it late takes the direct resumption, which is correct too, merely slower.
     */
    private var starting = false

    /** 0 until the permits of a grant lost to a cancellation are given back, then 1 (see [giveBackOnce]). */
    @Volatile
    @JvmField
    internal var givenBack: Int = 0

    /** Starts this node on the face with [permits], e.g. `semaphore.startAcquisition(permits, this)`. */
    protected abstract fun start(permits: Long)

    /** Returns the permits of a grant that the cancelled coroutine never got to use. */
    protected abstract fun giveBack()

    /** The exception for a closed semaphore, naming the call. */
    protected abstract fun closedException(): Throwable

    /**
     * Runs in [claim] once the grant is this coroutine's, under the core's lock and before any
     * waker runs: a short non-blocking step (a field store) that must not call back into the core.
     * The kotlinx mutex view records its owner token here, as kotlinx does at its own grant.
     */
    protected open fun claimed() {}

    /**
     * Suspends until the acquisition of [permits] started by [start] is granted (returns), closed
     * (throws what [closedException] makes), failed (throws its [failure]) or cancelled with the
     * coroutine (throws CancellationException; nothing is held). Arguments must have been checked:
     * an exception from [start] would leave the continuation behind.
     *
     * Call it as `await<Unit>(n)`. The type parameter is only there for the bytecode: inlining
     * `suspendCancellableCoroutine<Unit>` across modules makes the compiler coerce the result to
     * `Unit` and give this function a state machine (one more allocation per suspension); with an
     * erased `T` it stays a plain tail call. The result is always `Unit`.
     */
    suspend fun <T> await(permits: Long): T {
        KotlinxSupport.check()
        return suspendCancellableCoroutine<T> { cont ->
            @Suppress("UNCHECKED_CAST") // T is Unit at every call site; the value resumed is Unit
            continuation = cont as CancellableContinuation<Unit>
            if (!cont.isActive) {
                return@suspendCancellableCoroutine // cancelled already: never queue, throw at once
            }
            starting = true
            try {
                start(permits)
            } catch (refused: Throwable) { // shed (SemaphoreRejectedException): nothing queued
                cont.resumeWithException(refused)
                return@suspendCancellableCoroutine
            } finally {
                starting = false
            }
            if (isPending) {
                cont.invokeOnCancellation(this)
            }
        }
    }

    /** Under the core's lock: take the grant iff the coroutine is not cancelled. One volatile read. */
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
            isGranted -> if (starting || !KotlinxSupport.undispatchedResume || !dispatchedToOwnThread()) {
                val onCancellation: (Throwable, Unit, CoroutineContext) -> Unit = this
                continuation.resume(Unit, onCancellation)
            }
            isClosed -> continuation.resumeWithException(closedException())
            else -> continuation.resumeWithException(
                failure() ?: IllegalStateException("$this: woken without a grant, a close or a failure"),
            )
        }
    }

    /**
     * Dispatches [run] to the coroutine's dispatcher if it wants a dispatch and takes the task;
     * returns false (nothing dispatched) otherwise.
     */
    private fun dispatchedToOwnThread(): Boolean {
        val context = continuation.context
        val dispatcher = context[ContinuationInterceptor] as? CoroutineDispatcher ?: return false
        return try {
            if (dispatcher.isDispatchNeeded(context)) {
                dispatcher.dispatch(context, this)
                true
            } else {
                false
            }
        } catch (refused: Throwable) { // a closed executor: resume directly, kotlinx handles it
            false
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
     * [execute]), not on the cancelling thread. If the grant won the race (claimed before the
     * cancellation, but not delivered: kotlinx calls this handler only then), gives it back, also
     * on that dispatcher (the release may complete other waiters and run their wakers); a close or
     * failure that won holds nothing.
     */
    final override fun invoke(cause: Throwable?) {
        // withTimeout's cancellation: the semaphore's WaitListener hears "timed out".
        if (isPending && (if (cause is TimeoutCancellationException) cancelTimedOut(this) else cancel(this))) {
            return
        }
        if (isGranted) {
            execute { giveBackOnce() }
        }
    }

    /** Where the wake-ups of a withdrawal run: this coroutine's dispatcher. */
    final override fun execute(command: Runnable) {
        runOnOwnDispatcher(continuation.context, command)
    }

    /**
     * `onCancellation` of a granted resumption: the coroutine will not use the permits, so they go
     * back at once (exactly once: kotlinx calls it iff the value was not delivered).
     */
    final override fun invoke(cause: Throwable, value: Unit, context: CoroutineContext) {
        giveBackOnce()
    }

    /** [giveBack], at most once for this node, whichever kotlinx callback reports the lost grant. */
    private fun giveBackOnce() {
        if (GIVEN_BACK.compareAndSet(this, 0, 1)) {
            giveBack()
        }
    }

    private companion object {
        val GIVEN_BACK: AtomicIntegerFieldUpdater<ContinuationAcquisition> =
            AtomicIntegerFieldUpdater.newUpdater(ContinuationAcquisition::class.java, "givenBack")

        /**
         * Runs [task] on the dispatcher of [context] if it has one that wants to dispatch, so that
         * the permits a cancellation frees, and the wakers they run, never land on the thread
         * that cancelled (kotlinx's timer thread for withTimeout). Runs it here otherwise, and if
         * the dispatcher refuses it (a closed executor), so that nothing is ever lost.
         */
        fun runOnOwnDispatcher(context: CoroutineContext, task: Runnable) {
            val dispatcher = context[ContinuationInterceptor] as? CoroutineDispatcher
            if (dispatcher != null) {
                val dispatched = try {
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

    private val supported: Boolean = try {
        CancellableContinuation::class.java.getMethod(
            "resume",
            Any::class.java,
            Function3::class.java,
        )
        true
    } catch (missing: NoSuchMethodException) {
        false
    }

    /**
     * Whether the public, experimental `CancellableContinuation.resumeUndispatched` is there (it is
     * in every kotlinx since 1.0; checked so that a future kotlinx without it degrades to the direct
     * resumption instead of failing a grant).
     */
    val undispatchedResume: Boolean = try {
        CancellableContinuation::class.java.getMethod(
            "resumeUndispatched",
            CoroutineDispatcher::class.java,
            Any::class.java,
        )
        true
    } catch (missing: NoSuchMethodException) {
        false
    }

    fun check() {
        if (!supported) {
            throw UnsupportedOperationException(
                "handoff-kotlin needs kotlinx-coroutines-core $OLDEST_SUPPORTED or newer, but the classpath has " +
                    (CancellableContinuation::class.java.`package`?.implementationVersion ?: "an older version") +
                    " (CancellableContinuation.resume(value, onCancellation: (cause, value, context) -> Unit) is " +
                    "missing); upgrade org.jetbrains.kotlinx:kotlinx-coroutines-core",
            )
        }
    }
}
