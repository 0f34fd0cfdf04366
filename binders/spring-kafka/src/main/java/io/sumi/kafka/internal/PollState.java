package io.sumi.kafka.internal;

import io.sumi.consumer.HandlerDefinition;
import io.sumi.consumer.IdempotentExecutor;
import io.sumi.consumer.InboundMessage;
import io.sumi.consumer.PollClaim;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.common.TopicPartition;
import org.jspecify.annotations.Nullable;

/**
 * The records one {@code poll()} returned, and the {@link PollClaim}s taken for them (one per
 * handler, on the first record each handler is dispatched). Lives from one poll to the next on the
 * consumer thread; {@link #settle()} completes what ran and releases what did not.
 */
public final class PollState {

    private static final ThreadLocal<@Nullable PollState> CURRENT = new ThreadLocal<>();

    private final ConsumerRecords<?, ?> records;
    private @Nullable IdentityHashMap<ConsumerRecord<?, ?>, Integer> indexes;
    private @Nullable List<InboundMessage> messages;
    private final Map<HandlerDefinition, Optional<PollClaim>> claims = new LinkedHashMap<>();

    PollState(ConsumerRecords<?, ?> records) {
        this.records = records;
    }

    /** The poll being dispatched on this thread, if its consumer claims polls. */
    public static @Nullable PollState current() {
        return CURRENT.get();
    }

    static void bind(@Nullable PollState state) {
        if (state == null) {
            CURRENT.remove();
        } else {
            CURRENT.set(state);
        }
    }

    /** The index of {@code record} in this poll, -1 if it was not returned by it (a record kept from an earlier poll). */
    public int indexOf(ConsumerRecord<?, ?> record) {
        IdentityHashMap<ConsumerRecord<?, ?>, Integer> index = indexes;
        if (index == null) {
            index = new IdentityHashMap<>(records.count() * 2);
            int i = 0;
            for (ConsumerRecord<?, ?> each : records) {
                index.put(each, i++);
            }
            indexes = index;
        }
        Integer found = index.get(record);
        return found == null ? -1 : found;
    }

    /**
     * The claims of this poll for {@code handler}, taken now (one round trip) on its first record;
     * {@code null} when the executor does not claim polls for it (not lease mode, a budget).
     *
     * @param message the binder's message of a record ({@code KafkaInboundMessage::new})
     */
    public @Nullable PollClaim claimFor(
            HandlerDefinition handler,
            IdempotentExecutor executor,
            Function<ConsumerRecord<?, ?>, ? extends InboundMessage> message) {
        Optional<PollClaim> claim = claims.get(handler);
        if (claim == null) {
            List<InboundMessage> all = messages;
            if (all == null) {
                all = new ArrayList<>(records.count());
                for (ConsumerRecord<?, ?> record : records) {
                    all.add(message.apply(record));
                }
                messages = all;
            }
            claim = Optional.ofNullable(executor.claimPoll(handler, all));
            claims.put(handler, claim);
        }
        return claim.orElse(null);
    }

    /** The offset of this poll's first record on each of its partitions. */
    Map<TopicPartition, Long> firstOffsets() {
        Map<TopicPartition, Long> first = new LinkedHashMap<>();
        for (TopicPartition partition : records.partitions()) {
            List<? extends ConsumerRecord<?, ?>> polled = records.records(partition);
            if (!polled.isEmpty()) {
                first.put(partition, polled.get(0).offset());
            }
        }
        return first;
    }

    /** Writes the completions kept so far; throws (and keeps them) if the ledger fails. */
    void completePending() {
        RuntimeException failure = null;
        for (Optional<PollClaim> claim : claims.values()) {
            if (claim.isPresent()) {
                try {
                    claim.get().completePending();
                } catch (RuntimeException ex) {
                    if (failure == null) {
                        failure = ex;
                    } else {
                        failure.addSuppressed(ex);
                    }
                }
            }
        }
        if (failure != null) {
            throw failure;
        }
    }

    /** Ends the poll without a ledger call: renewal stops, kept completions are dropped, the claims lapse. */
    void abandon() {
        for (Optional<PollClaim> claim : claims.values()) {
            claim.ifPresent(PollClaim::abandon);
        }
    }

    /** Completes what ran and releases what was not run; throws (after releasing) if a completion fails. */
    void settle() {
        try {
            completePending();
        } finally {
            for (Optional<PollClaim> claim : claims.values()) {
                claim.ifPresent(PollClaim::releaseUnrun);
            }
        }
    }
}
