package io.sumi.testing;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * The same call made from several threads at one moment: each thread waits on one latch, which is
 * released only once every thread has its call submitted, so the calls overlap as far as the
 * threads allow instead of hoping that they do.
 */
public final class Race {

    private Race() {}

    /**
     * Runs {@code call} on {@code threads} threads of their own, released together, and returns
     * their results in submission order; a call that throws fails the race with its exception
     * (as the {@link ExecutionException}'s cause).
     */
    public static <T> List<T> of(int threads, Callable<T> call) throws InterruptedException, ExecutionException {
        CountDownLatch start = new CountDownLatch(1);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<T>> futures = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                futures.add(pool.submit(() -> {
                    start.await();
                    return call.call();
                }));
            }
            start.countDown();
            List<T> results = new ArrayList<>();
            for (Future<T> future : futures) {
                results.add(future.get());
            }
            return results;
        } finally {
            pool.shutdownNow();
        }
    }
}
