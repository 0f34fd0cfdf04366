package io.sumi.benchmarks;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.UUID;

/**
 * New, unique message ids: random UUIDs in text form (36 characters), like the keys producers
 * usually send. They land at random places in the primary-key index, as real keys do. Not
 * thread-safe (one client thread per case).
 */
final class Ids {

    private final SplittableRandom random;

    Ids(long seed) {
        this.random = new SplittableRandom(seed);
    }

    String next() {
        return new UUID(random.nextLong(), random.nextLong()).toString();
    }

    List<String> next(int count) {
        List<String> ids = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            ids.add(next());
        }
        return ids;
    }
}
