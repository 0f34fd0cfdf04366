package io.sumi.testing;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A clock that tests move by hand, so lease expiry and retention are tested without sleeping.
 * Instants are kept at microsecond precision, which every ledger database stores exactly.
 */
public final class MutableClock extends Clock {

    private final AtomicReference<Instant> now;

    public MutableClock(Instant start) {
        this.now = new AtomicReference<>(start.truncatedTo(ChronoUnit.MICROS));
    }

    public static MutableClock at(String instant) {
        return new MutableClock(Instant.parse(instant));
    }

    public void advance(Duration duration) {
        now.updateAndGet(instant -> instant.plus(duration));
    }

    public void set(Instant instant) {
        now.set(instant.truncatedTo(ChronoUnit.MICROS));
    }

    @Override
    public Instant instant() {
        return Objects.requireNonNull(now.get());
    }

    @Override
    public ZoneId getZone() {
        return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(ZoneId zone) {
        return this;
    }
}
