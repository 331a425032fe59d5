// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import dev.handoff.spi.Adapters;

/**
 * The faces' start methods for {@link Adapters}: they stay package-private on the faces, so a
 * user's completion list shows the faces' own calls only. Installed by {@link Acquisition}'s
 * class initializer.
 */
final class SpiAccess implements Adapters.Access {

    @Override
    public <A extends Acquisition> A startAcquisition(Semaphore semaphore, long n, A acquisition) {
        return semaphore.startAcquisition(n, acquisition);
    }

    @Override
    public <A extends Acquisition> A startAcquisitionUpTo(Semaphore semaphore, long min, long max, A acquisition) {
        return semaphore.startAcquisitionUpTo(min, max, acquisition);
    }

    @Override
    public <A extends Acquisition> A startLock(Mutex mutex, A acquisition) {
        return mutex.startLock(acquisition);
    }

    @Override
    public <A extends Acquisition> A startReadLock(RwLock lock, A acquisition) {
        return lock.startReadLock(acquisition);
    }

    @Override
    public <A extends Acquisition> A startWriteLock(RwLock lock, A acquisition) {
        return lock.startWriteLock(acquisition);
    }

    @Override
    public <K, A extends Acquisition> A startAcquisition(FairShareSemaphore<K> pool, K key, long n, A acquisition) {
        return pool.startAcquisition(key, n, acquisition);
    }
}
