package io.sumi.outbox.cdc;

/**
 * The replication slot as PostgreSQL reports it ({@code pg_replication_slots}).
 *
 * @param exists whether the slot exists (it is created by the first engine that streams)
 * @param active whether a connection streams it now (on any instance)
 * @param retainedWalBytes WAL the server keeps for the slot: from its {@code restart_lsn} to the
 *     current WAL position. Grows while nobody streams, and never shrinks below what the slot
 *     still needs.
 * @param lagBytes WAL written since the slot's {@code confirmed_flush_lsn}: what the engine has
 *     not confirmed yet
 */
public record SlotStatus(boolean exists, boolean active, long retainedWalBytes, long lagBytes) {

    /** A slot that does not exist (yet). */
    public static final SlotStatus MISSING = new SlotStatus(false, false, 0, 0);
}
