package io.sumi.outbox.cdc;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.time.Duration;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Gauges of the CDC path, tagged with the slot: {@code sumi.outbox.cdc.slot.retained} (bytes of WAL
 * the server keeps for the slot), {@code sumi.outbox.cdc.slot.lag} (bytes not yet confirmed),
 * {@code sumi.outbox.cdc.slot.active} (1 while some instance streams it) and
 * {@code sumi.outbox.cdc.streaming} (1 while this instance does). The slot is read at most once
 * per {@code refreshInterval}, whatever the scrape rate; a failed read keeps the last values.
 */
public final class OutboxCdcMetrics implements MeterBinder {

    private static final Logger log = LoggerFactory.getLogger(OutboxCdcMetrics.class);

    private final OutboxCdc cdc;
    private final long refreshNanos;
    private volatile SlotStatus last = SlotStatus.MISSING;
    private volatile long readAt;

    public OutboxCdcMetrics(OutboxCdc cdc, Duration refreshInterval) {
        this.cdc = Objects.requireNonNull(cdc, "cdc");
        this.refreshNanos = refreshInterval.toNanos();
        this.readAt = System.nanoTime() - refreshNanos - 1;
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        String slot = cdc.slotName();
        // Strong references: the registry keeps the gauges' state alive, so a caller that binds
        // and drops this object (no bean holds it) does not leave gauges that read NaN after a GC.
        Gauge.builder("sumi.outbox.cdc.slot.retained", this, m -> m.status().retainedWalBytes())
                .tag("slot", slot)
                .baseUnit("bytes")
                .description("WAL the server retains for the outbox's replication slot")
                .strongReference(true)
                .register(registry);
        Gauge.builder("sumi.outbox.cdc.slot.lag", this, m -> m.status().lagBytes())
                .tag("slot", slot)
                .baseUnit("bytes")
                .description("WAL written since the slot's confirmed position")
                .strongReference(true)
                .register(registry);
        Gauge.builder("sumi.outbox.cdc.slot.active", this, m -> m.status().active() ? 1 : 0)
                .tag("slot", slot)
                .description("1 while some instance streams the outbox's replication slot")
                .strongReference(true)
                .register(registry);
        Gauge.builder("sumi.outbox.cdc.streaming", cdc, c -> c.isStreaming() ? 1 : 0)
                .tag("slot", slot)
                .description("1 while this instance streams the outbox's replication slot")
                .strongReference(true)
                .register(registry);
    }

    /** The slot's state, read again when the last read is older than the refresh interval. */
    public SlotStatus status() {
        long now = System.nanoTime();
        if (now - readAt > refreshNanos) {
            readAt = now;
            try {
                last = cdc.slotStatus();
            } catch (RuntimeException ex) {
                log.debug("Could not read the outbox CDC slot's state", ex);
            }
        }
        return last;
    }
}
