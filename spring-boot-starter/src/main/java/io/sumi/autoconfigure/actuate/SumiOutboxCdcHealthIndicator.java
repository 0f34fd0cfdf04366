package io.sumi.autoconfigure.actuate;

import io.sumi.outbox.cdc.OutboxCdc;
import io.sumi.outbox.cdc.SlotStatus;
import java.util.Objects;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.util.unit.DataSize;

/**
 * The outbox CDC path's health: {@code DOWN} when the replication slot is inactive (no instance
 * streams it: the WAL it retains grows, and rows wait for the polling interval) or retains more WAL
 * than {@code sumi.outbox.cdc.max-retained-wal}; {@code UP} otherwise. Details: whether this
 * instance streams, the slot's retained WAL and lag. One query on {@code pg_replication_slots}.
 *
 * <p>Like the outbox's, the slot is shared by the fleet: keep this out of the liveness and
 * readiness groups (docs/operations.md).
 */
public class SumiOutboxCdcHealthIndicator implements HealthIndicator {

    private final String slotName;
    private final Supplier<SlotStatus> slotStatus;
    private final BooleanSupplier streamingHere;
    private final DataSize maxRetainedWal;

    public SumiOutboxCdcHealthIndicator(OutboxCdc cdc, DataSize maxRetainedWal) {
        this(Objects.requireNonNull(cdc, "cdc").slotName(), cdc::slotStatus, cdc::isStreaming, maxRetainedWal);
    }

    /** The indicator over the slot's state as read elsewhere: what the per-state tests drive. */
    SumiOutboxCdcHealthIndicator(
            String slotName, Supplier<SlotStatus> slotStatus, BooleanSupplier streamingHere, DataSize maxRetainedWal) {
        this.slotName = slotName;
        this.slotStatus = slotStatus;
        this.streamingHere = streamingHere;
        this.maxRetainedWal = Objects.requireNonNull(maxRetainedWal, "maxRetainedWal");
    }

    @Override
    public Health health() {
        SlotStatus slot = slotStatus.get();
        boolean tooMuchWal = slot.retainedWalBytes() > maxRetainedWal.toBytes();
        Health.Builder health = !slot.active() || tooMuchWal ? Health.down() : Health.up();
        health.withDetail("slot", slotName)
                .withDetail("slotExists", slot.exists())
                .withDetail("slotActive", slot.active())
                .withDetail("streamingHere", streamingHere.getAsBoolean())
                .withDetail("retainedWalBytes", slot.retainedWalBytes())
                .withDetail("lagBytes", slot.lagBytes())
                .withDetail("maxRetainedWalBytes", maxRetainedWal.toBytes());
        if (!slot.active()) {
            health.withDetail(
                    "action",
                    "no instance streams the slot: check the instances' logs (wal_level, REPLICATION, the lock);"
                            + " rows are sent by polling meanwhile (docs/operations.md, outbox CDC)");
        } else if (tooMuchWal) {
            health.withDetail(
                    "action",
                    "the slot retains more WAL than allowed: the engine is not confirming (docs/operations.md,"
                            + " outbox CDC)");
        }
        return health.build();
    }
}
