// SPDX-License-Identifier: Apache-2.0
package dev.handoff.reactor;

import dev.handoff.Mutex;
import dev.handoff.Permits;
import dev.handoff.RwLock;
import dev.handoff.Semaphore;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.Supplier;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Reactor faces of {@link Semaphore}, {@link Mutex} and {@link RwLock}: operators that acquire when
 * subscribed, run a body, and release exactly once however it ends.
 *
 * <p>Why not {@code Mono.fromFuture(semaphore.acquireAsync(n))}? Two leaks. The future joins the
 * queue when the {@code Mono} is <em>built</em>, not when it is subscribed: a {@code Mono} that is
 * never subscribed (or subscribed twice) still takes (or takes once) its place in the queue. And
 * when a subscriber cancels just as the grant lands, the grant wins the race inside the future,
 * the cancelled {@code Mono} drops it, and the permits are held by nobody. The operators here do
 * neither:
 *
 * <pre>{@code
 * Mono<Response> call = ReactorSemaphores.withPermits(budget, request.bytes(),
 *         () -> client.send(request));     // acquired on subscribe, released when send ends
 * }</pre>
 *
 * <h2>Semantics, for every operator of this class</h2>
 * <ul>
 * <li><b>Lazy.</b> Nothing is queued when the operator is built. Each subscription joins the
 *     queue anew, in FIFO order with every other face of the same semaphore (futures, blocking
 *     callers, coroutines).</li>
 * <li><b>Exactly once.</b> The body is subscribed once the permits are granted; they are released
 *     exactly once, when the body completes, fails, or is cancelled, and also when the body
 *     supplier throws or returns {@code null} (the result then fails with that exception).</li>
 * <li><b>Cancellation.</b> Cancelling before the grant withdraws the wait: nothing is held, and
 *     permits partially handed to the wait go on to the waiters behind it. If the grant wins the
 *     race with the cancel, the library releases the late grant itself. So {@code timeout(..)},
 *     {@code take(..)} and a disposed subscription never leak permits.</li>
 * <li><b>Failure.</b> A closed semaphore fails the subscription with
 *     {@link dev.handoff.SemaphoreClosedException}, and a semaphore built with a queue limit may
 *     reject it with {@link dev.handoff.SemaphoreRejectedException}; nothing is held and the body
 *     is not run.</li>
 * <li><b>Bad arguments</b> throw at assembly, when the operator is called, exactly as the core's
 *     {@code acquireAsync} does ({@code n < 0}, {@code n > capacity()}, a {@code null}). The one
 *     check that can only be made at subscription — the capacity was lowered with
 *     {@code setCapacity} in between so that {@code n} no longer fits — is signalled as
 *     {@code onError(IllegalArgumentException)}.</li>
 * <li><b>Threads.</b> Like the core's futures, a grant is delivered on the thread that made it:
 *     the thread whose release (or cancel) handed the permits over, or the subscribing thread if
 *     they were free. The body is subscribed there; add {@code publishOn} or
 *     {@code subscribeOn} to the body if it blocks or is long.</li>
 * <li><b>Memory consistency.</b> Actions before a release happen-before the body of the
 *     subscription that release grants.</li>
 * </ul>
 */
public final class ReactorSemaphores {

    private ReactorSemaphores() {}

    // ------------------------------------------------------------------ Semaphore

    /**
     * Runs the {@code Mono} that {@code body} supplies while holding {@code n} permits of
     * {@code semaphore}: on each subscription, acquires, then subscribes to {@code body.get()},
     * and releases exactly once when it completes, fails or is cancelled. See the class
     * documentation for laziness, cancellation, failures and threads. The result's value is
     * emitted after the permits are released.
     *
     * <pre>{@code
     * Mono<byte[]> download = ReactorSemaphores.withPermits(memory, item.size(),
     *         () -> storage.read(item));
     * }</pre>
     *
     * @param semaphore the semaphore to take permits from
     * @param n the number of permits; {@code 0} is granted at once
     * @param body supplies the work to run holding the permits; called once per subscription,
     *     after the grant
     * @param <T> the value type
     * @return a lazy {@code Mono} with {@code body}'s outcome
     * @throws IllegalArgumentException if {@code n < 0} or {@code n > semaphore.capacity()}
     * @throws NullPointerException if {@code semaphore} or {@code body} is null
     */
    public static <T> Mono<T> withPermits(Semaphore semaphore, long n, Supplier<? extends Mono<T>> body) {
        checkSemaphore("withPermits", semaphore, n);
        checkBody("withPermits(" + n + ", null)", body);
        return scoped(acquireUnchecked(semaphore, n), body);
    }

    /**
     * Streams the {@code Publisher} that {@code body} supplies while holding {@code n} permits of
     * {@code semaphore}: on each subscription, acquires, then subscribes to {@code body.get()},
     * and releases exactly once when it completes, fails or is cancelled (as by {@code take(k)}).
     * See the class documentation for laziness, cancellation, failures and threads. Elements are
     * emitted while the permits are held; the terminal signal comes after the release.
     *
     * <pre>{@code
     * Flux<Row> rows = ReactorSemaphores.withPermitsMany(connections, 1,
     *         () -> database.query("select * from orders"));
     * }</pre>
     *
     * @param semaphore the semaphore to take permits from
     * @param n the number of permits; {@code 0} is granted at once
     * @param body supplies the work to run holding the permits; called once per subscription,
     *     after the grant
     * @param <T> the element type
     * @return a lazy {@code Flux} with {@code body}'s elements and outcome
     * @throws IllegalArgumentException if {@code n < 0} or {@code n > semaphore.capacity()}
     * @throws NullPointerException if {@code semaphore} or {@code body} is null
     */
    public static <T> Flux<T> withPermitsMany(Semaphore semaphore, long n, Supplier<? extends Publisher<T>> body) {
        checkSemaphore("withPermitsMany", semaphore, n);
        checkBody("withPermitsMany(" + n + ", null)", body);
        return scopedMany(acquireUnchecked(semaphore, n), body);
    }

    /**
     * Acquires {@code n} permits on each subscription and emits a {@link Permits} handle once they
     * are granted, for callers that release elsewhere (a callback, another pipeline). The handle is
     * the core's own, the one {@link Semaphore#acquireAsync(long)} completes with:
     * {@link Permits#permits()} is {@code n}, and only the first {@link Permits#release()} (or
     * {@link Permits#close()}) gives the permits back, so it is safe to call from several cleanup
     * paths ({@code doFinally}, a discard hook, a {@code finally} block). The subscriber that
     * receives the handle owns the permits and must release them. A subscriber that cancels before
     * receiving it holds nothing: the wait is withdrawn, or, if the grant won the race, the library
     * releases it. See the class documentation for failures and threads.
     *
     * <p>Once {@code onNext} has handed the handle over, only the subscriber can release it. A
     * subscriber or operator that drops a value arriving while it is being cancelled leaks the
     * handle, and no publisher can see that: the lambda subscriber of {@code subscribe(consumer)}
     * after {@code dispose()}, {@code block(timeout)} timing out, and (observed with reactor-core
     * 3.8.8) {@code flatMap} cancelled as the handle arrives. So when the consumer can be
     * cancelled, prefer {@link #withPermits(Semaphore, long, Supplier)} and
     * {@link #withPermitsMany(Semaphore, long, Supplier)}, which are exact under every cancel;
     * use the handle where the holder is not cancelled, or releases it on its own terms.
     *
     * <pre>{@code
     * ReactorSemaphores.acquire(budget, job.cost())
     *         .subscribe(permits -> job.start(permits::release)); // the job's callback releases
     * }</pre>
     *
     * @param semaphore the semaphore to take permits from
     * @param n the number of permits; {@code 0} is granted at once
     * @return a lazy {@code Mono} of the held permits
     * @throws IllegalArgumentException if {@code n < 0} or {@code n > semaphore.capacity()}
     * @throws NullPointerException if {@code semaphore} is null
     */
    public static Mono<Permits> acquire(Semaphore semaphore, long n) {
        checkSemaphore("acquire", semaphore, n);
        return acquireUnchecked(semaphore, n);
    }

    // ------------------------------------------------------------------ Mutex

    /**
     * Runs the {@code Mono} that {@code body} supplies while holding {@code mutex}: the Reactor
     * form of {@link Mutex#withLockAsync(Supplier)}, with the rules of
     * {@link #withPermits(Semaphore, long, Supplier)} (lazy; unlocked exactly once on complete,
     * error or cancel; a cancel racing the grant leaves the mutex unlocked).
     *
     * <pre>{@code
     * Mono<Void> saved = ReactorSemaphores.withLock(mutex, () -> store.write(snapshot));
     * }</pre>
     *
     * @param mutex the mutex to lock
     * @param body supplies the work to run holding the lock; called once per subscription
     * @param <T> the value type
     * @return a lazy {@code Mono} with {@code body}'s outcome
     * @throws NullPointerException if {@code mutex} or {@code body} is null
     */
    public static <T> Mono<T> withLock(Mutex mutex, Supplier<? extends Mono<T>> body) {
        checkLock("withLock", mutex);
        checkBody("withLock(mutex, null)", body);
        return scoped(lockUnchecked(mutex), body);
    }

    /**
     * Streams the {@code Publisher} that {@code body} supplies while holding {@code mutex}; see
     * {@link #withPermitsMany(Semaphore, long, Supplier)}.
     *
     * <pre>{@code
     * Flux<Event> replay = ReactorSemaphores.withLockMany(journalLock, () -> journal.readAll());
     * }</pre>
     *
     * @param mutex the mutex to lock
     * @param body supplies the work to run holding the lock; called once per subscription
     * @param <T> the element type
     * @return a lazy {@code Flux} with {@code body}'s elements and outcome
     * @throws NullPointerException if {@code mutex} or {@code body} is null
     */
    public static <T> Flux<T> withLockMany(Mutex mutex, Supplier<? extends Publisher<T>> body) {
        checkLock("withLockMany", mutex);
        checkBody("withLockMany(mutex, null)", body);
        return scopedMany(lockUnchecked(mutex), body);
    }

    /**
     * Locks {@code mutex} on each subscription and emits a {@link Permits} handle (of one permit)
     * once it is held; {@link Permits#release()} unlocks. See
     * {@link #acquire(Semaphore, long)} for who owns the handle.
     *
     * <pre>{@code
     * ReactorSemaphores.lock(mutex).subscribe(lock -> legacy.update(state, lock::release));
     * }</pre>
     *
     * @param mutex the mutex to lock
     * @return a lazy {@code Mono} of the held lock
     * @throws NullPointerException if {@code mutex} is null
     */
    public static Mono<Permits> lock(Mutex mutex) {
        checkLock("lock", mutex);
        return lockUnchecked(mutex);
    }

    // ------------------------------------------------------------------ RwLock

    /**
     * Runs the {@code Mono} that {@code body} supplies while holding a read lock of {@code lock};
     * see {@link #withPermits(Semaphore, long, Supplier)}. A waiting writer blocks readers that
     * subscribe after it (FIFO).
     *
     * <pre>{@code
     * Mono<Page> page = ReactorSemaphores.withReadLock(indexLock, () -> index.lookup(query));
     * }</pre>
     *
     * @param lock the read-write lock
     * @param body supplies the work to run holding a read lock; called once per subscription
     * @param <T> the value type
     * @return a lazy {@code Mono} with {@code body}'s outcome
     * @throws NullPointerException if {@code lock} or {@code body} is null
     */
    public static <T> Mono<T> withReadLock(RwLock lock, Supplier<? extends Mono<T>> body) {
        checkLock("withReadLock", lock);
        checkBody("withReadLock(lock, null)", body);
        return scoped(readLockUnchecked(lock), body);
    }

    /**
     * Streams the {@code Publisher} that {@code body} supplies while holding a read lock of
     * {@code lock}; see {@link #withPermitsMany(Semaphore, long, Supplier)}.
     *
     * <pre>{@code
     * Flux<Entry> entries = ReactorSemaphores.withReadLockMany(indexLock, () -> index.scan(range));
     * }</pre>
     *
     * @param lock the read-write lock
     * @param body supplies the work to run holding a read lock; called once per subscription
     * @param <T> the element type
     * @return a lazy {@code Flux} with {@code body}'s elements and outcome
     * @throws NullPointerException if {@code lock} or {@code body} is null
     */
    public static <T> Flux<T> withReadLockMany(RwLock lock, Supplier<? extends Publisher<T>> body) {
        checkLock("withReadLockMany", lock);
        checkBody("withReadLockMany(lock, null)", body);
        return scopedMany(readLockUnchecked(lock), body);
    }

    /**
     * Takes a read lock of {@code lock} on each subscription and emits a {@link Permits} handle
     * (of one permit) once it is held; {@link Permits#release()} read-unlocks. See
     * {@link #acquire(Semaphore, long)} for who owns the handle.
     *
     * <pre>{@code
     * ReactorSemaphores.readLock(indexLock).subscribe(read -> cache.refresh(read::release));
     * }</pre>
     *
     * @param lock the read-write lock
     * @return a lazy {@code Mono} of the held read lock
     * @throws NullPointerException if {@code lock} is null
     */
    public static Mono<Permits> readLock(RwLock lock) {
        checkLock("readLock", lock);
        return readLockUnchecked(lock);
    }

    /**
     * Runs the {@code Mono} that {@code body} supplies while holding the write lock of
     * {@code lock}; see {@link #withPermits(Semaphore, long, Supplier)}. The body must not
     * {@link RwLock#downgrade() downgrade} or unlock the lock itself: the operator write-unlocks.
     *
     * <pre>{@code
     * Mono<Void> rebuilt = ReactorSemaphores.withWriteLock(indexLock, () -> index.rebuild(changes));
     * }</pre>
     *
     * @param lock the read-write lock
     * @param body supplies the work to run holding the write lock; called once per subscription
     * @param <T> the value type
     * @return a lazy {@code Mono} with {@code body}'s outcome
     * @throws NullPointerException if {@code lock} or {@code body} is null
     */
    public static <T> Mono<T> withWriteLock(RwLock lock, Supplier<? extends Mono<T>> body) {
        checkLock("withWriteLock", lock);
        checkBody("withWriteLock(lock, null)", body);
        return scoped(writeLockUnchecked(lock), body);
    }

    /**
     * Streams the {@code Publisher} that {@code body} supplies while holding the write lock of
     * {@code lock}; see {@link #withPermitsMany(Semaphore, long, Supplier)} and
     * {@link #withWriteLock(RwLock, Supplier)}.
     *
     * <pre>{@code
     * Flux<Change> applied = ReactorSemaphores.withWriteLockMany(indexLock, () -> index.apply(batch));
     * }</pre>
     *
     * @param lock the read-write lock
     * @param body supplies the work to run holding the write lock; called once per subscription
     * @param <T> the element type
     * @return a lazy {@code Flux} with {@code body}'s elements and outcome
     * @throws NullPointerException if {@code lock} or {@code body} is null
     */
    public static <T> Flux<T> withWriteLockMany(RwLock lock, Supplier<? extends Publisher<T>> body) {
        checkLock("withWriteLockMany", lock);
        checkBody("withWriteLockMany(lock, null)", body);
        return scopedMany(writeLockUnchecked(lock), body);
    }

    /**
     * Takes the write lock of {@code lock} on each subscription and emits a {@link Permits}
     * handle (of {@link RwLock#maxReaders()} permits) once it is held; {@link Permits#release()}
     * write-unlocks. See {@link #acquire(Semaphore, long)} for who owns the handle.
     *
     * <pre>{@code
     * ReactorSemaphores.writeLock(indexLock).subscribe(write -> index.compact(write::release));
     * }</pre>
     *
     * @param lock the read-write lock
     * @return a lazy {@code Mono} of the held write lock
     * @throws NullPointerException if {@code lock} is null
     */
    public static Mono<Permits> writeLock(RwLock lock) {
        checkLock("writeLock", lock);
        return writeLockUnchecked(lock);
    }

    // ------------------------------------------------------------------ internals

    private static Mono<Permits> acquireUnchecked(Semaphore semaphore, long n) {
        return lazyAcquisition(() -> semaphore.acquireAsync(n));
    }

    private static Mono<Permits> lockUnchecked(Mutex mutex) {
        return lazyAcquisition(mutex::lockAsync);
    }

    private static Mono<Permits> readLockUnchecked(RwLock lock) {
        return lazyAcquisition(lock::readLockAsync);
    }

    private static Mono<Permits> writeLockUnchecked(RwLock lock) {
        return lazyAcquisition(lock::writeLockAsync);
    }

    /**
     * The one acquisition every operator is built on. On subscribe, starts the core's future
     * (so nothing is queued before); on the grant, emits the {@link Permits} handle that the
     * future completes with (the core's own: no wrapper is allocated).
     *
     * <p>Who owns a granted handle is decided by the {@code MonoSink}: either {@code success}
     * delivers it to the subscriber (which then owns it), or the subscriber's cancel got there
     * first, in which case the sink runs {@code onCancel} and drops the value; never both. So
     * {@code onCancel} alone deals with the undelivered case: it withdraws the wait, and if the
     * wait could not be withdrawn ({@code cancel} returned false: the grant won), it releases the
     * handle once the future has completed with the grant. The handle gives its permits back
     * once only, so a second release (a discard hook of the user's, say) is harmless.
     * Package-private: {@link ReactorAdaptive} builds its sampled operators on it.
     */
    static Mono<Permits> lazyAcquisition(Supplier<? extends CompletableFuture<? extends Permits>> start) {
        return Mono.create(sink -> {
            CompletableFuture<? extends Permits> wait = start.get(); // throws only if the capacity shrank: onError
            sink.onCancel(() -> {
                if (!wait.cancel(false)) {
                    wait.whenComplete((permits, failure) -> {
                        if (failure == null) {
                            permits.release(); // a grant nobody will receive
                        }
                    });
                }
            });
            wait.whenComplete((permits, failure) -> {
                if (failure == null) {
                    sink.success(permits);
                } else if (!(wait.isCancelled() && failure instanceof CancellationException)) {
                    sink.error(unwrap(failure)); // closed, rejected, capacity lowered: nothing held
                }
            });
        });
    }

    private static <T> Mono<T> scoped(Mono<Permits> acquisition, Supplier<? extends Mono<T>> body) {
        return Mono.usingWhen(
                acquisition,
                permits -> body.get(),
                ReactorSemaphores::releasing,
                (permits, failure) -> releasing(permits),
                ReactorSemaphores::releasing);
    }

    private static <T> Flux<T> scopedMany(Mono<Permits> acquisition, Supplier<? extends Publisher<T>> body) {
        return Flux.usingWhen(
                acquisition,
                permits -> body.get(),
                ReactorSemaphores::releasing,
                (permits, failure) -> releasing(permits),
                ReactorSemaphores::releasing);
    }

    private static Mono<Void> releasing(Permits permits) {
        return Mono.fromRunnable(permits::release);
    }

    private static Throwable unwrap(Throwable failure) {
        return failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
    }

    private static void checkSemaphore(String call, Semaphore semaphore, long n) {
        if (semaphore == null) {
            throw new NullPointerException(call + "(null, " + n + "): the semaphore is null");
        }
        if (n < 0) {
            throw new IllegalArgumentException(call + "(" + n + "): the number of permits must not be negative");
        }
        long capacity = semaphore.capacity();
        if (n > capacity) {
            throw new IllegalArgumentException(
                    call + "(" + n + "): exceeds the capacity " + capacity + ", so it could never be granted");
        }
    }

    private static void checkLock(String call, Object lock) {
        if (lock == null) {
            throw new NullPointerException(call + "(null): the lock is null");
        }
    }

    private static void checkBody(String call, Supplier<?> body) {
        if (body == null) {
            throw new NullPointerException(call + ": the body is null");
        }
    }
}
