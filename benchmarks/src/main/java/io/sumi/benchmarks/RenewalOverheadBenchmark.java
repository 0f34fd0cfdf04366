package io.sumi.benchmarks;

import io.sumi.consumer.HandlerDefinition;
import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentExecutor;
import io.sumi.consumer.InboundMessage;
import io.sumi.consumer.MessageOutcome;
import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import io.sumi.store.MessageStatus;
import io.sumi.store.ProcessedMessage;
import io.sumi.store.ProcessedMessageStore;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/**
 * What lease renewal costs a quick lease-mode handler, without a database: the executor runs a
 * no-op handler over a ledger in memory that answers at once, with renewal on (a renewal task
 * scheduled on the executor's scheduler and cancelled when the handler returns) and off, side by
 * side, alternating rounds. With a real ledger each message also pays two round trips (~0.3 ms
 * each on PostgreSQL here), so this is the upper bound of the relative overhead.
 *
 * <pre>
 * java -cp benchmarks/target/sumi-benchmarks.jar io.sumi.benchmarks.RenewalOverheadBenchmark [rounds] [messages per round]
 * </pre>
 */
public final class RenewalOverheadBenchmark {

    private RenewalOverheadBenchmark() {}

    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 5;
        int messages = args.length > 1 ? Integer.parseInt(args[1]) : 200_000;
        HandlerDefinition handler =
                HandlerDefinition.builder("bench").mode(IdempotencyMode.LEASE).build();
        List<InboundMessage> payloads = new ArrayList<>();
        for (int i = 0; i < 1024; i++) {
            payloads.add(
                    InboundMessage.of(LedgerCases.PAYLOAD, Map.of(HandlerDefinition.IDEMPOTENCY_KEY_HEADER, "k" + i)));
        }
        try (IdempotentExecutor on =
                        IdempotentExecutor.builder(new InstantLedger()).build();
                IdempotentExecutor off = IdempotentExecutor.builder(new InstantLedger())
                        .leaseRenewal(false)
                        .build()) {
            run(on, handler, payloads, messages); // warm-up
            run(off, handler, payloads, messages);
            List<Double> onNanos = new ArrayList<>();
            List<Double> offNanos = new ArrayList<>();
            for (int round = 1; round <= rounds; round++) {
                double withRenewal = run(on, handler, payloads, messages);
                double without = run(off, handler, payloads, messages);
                onNanos.add(withRenewal);
                offNanos.add(without);
                System.out.printf(
                        Locale.ROOT,
                        "round %d  renewal on %8.0f ns/message   off %8.0f ns/message   on/off %.2f%n",
                        round,
                        withRenewal,
                        without,
                        withRenewal / without);
            }
            double medianOn = median(onNanos);
            double medianOff = median(offNanos);
            System.out.printf(
                    Locale.ROOT,
                    "median     renewal on %8.0f ns/message   off %8.0f ns/message   on/off %.2f   added %.0f ns/message%n",
                    medianOn,
                    medianOff,
                    medianOn / medianOff,
                    medianOn - medianOff);
        }
    }

    private static double run(
            IdempotentExecutor executor, HandlerDefinition handler, List<InboundMessage> payloads, int messages)
            throws Exception {
        long start = System.nanoTime();
        for (int i = 0; i < messages; i++) {
            if (executor.execute(handler, payloads.get(i & 1023), () -> null).outcome() != MessageOutcome.PROCESSED) {
                throw new IllegalStateException("the in-memory ledger claims every message");
            }
        }
        return (System.nanoTime() - start) / (double) messages;
    }

    private static double median(List<Double> values) {
        List<Double> sorted = new ArrayList<>(values);
        sorted.sort(null);
        return sorted.get(sorted.size() / 2);
    }

    /** A ledger that claims and completes everything at once, in memory: only the executor's own cost remains. */
    static final class InstantLedger implements ProcessedMessageStore {

        private final AtomicLong tokens = new AtomicLong();

        @Override
        public List<ClaimResult> claimAll(String consumer, List<ClaimRequest> requests, Duration lease) {
            long token = tokens.incrementAndGet();
            Instant now = Instant.now();
            List<ClaimResult> results = new ArrayList<>(requests.size());
            for (ClaimRequest request : requests) {
                results.add(ClaimResult.of(
                        new ProcessedMessage(
                                consumer,
                                request.messageId(),
                                MessageStatus.IN_PROGRESS,
                                token,
                                now.plus(lease),
                                1,
                                request.fingerprint(),
                                null,
                                now,
                                null),
                        token));
            }
            return results;
        }

        @Override
        public List<ClaimResult> claimAllCompleted(String consumer, List<ClaimRequest> requests) {
            throw new UnsupportedOperationException("lease mode only");
        }

        @Override
        public int completeAll(String consumer, long claimToken, Collection<String> messageIds) {
            return messageIds.size();
        }

        @Override
        public int releaseAll(String consumer, long claimToken, Collection<String> messageIds, @Nullable String error) {
            return messageIds.size();
        }

        @Override
        public int renewAll(String consumer, long claimToken, Collection<String> messageIds, Duration lease) {
            return messageIds.size();
        }

        @Override
        public Optional<ProcessedMessage> find(String consumer, String messageId) {
            return Optional.empty();
        }

        // Never reached by this benchmark (no replies, no reconciliation, no gauges).
        @Override
        public boolean complete(ProcessedMessage claim, io.sumi.store.@Nullable StoredReply reply) {
            return completeAll(claim.consumer(), claim.claimToken(), List.of(claim.messageId())) == 1;
        }

        @Override
        public boolean storeReply(ProcessedMessage claim, io.sumi.store.StoredReply reply) {
            throw new UnsupportedOperationException("not used by the benchmark");
        }

        @Override
        public Optional<io.sumi.store.StoredReply> findReply(String consumer, String messageId) {
            return Optional.empty();
        }

        @Override
        public boolean markForReconciliation(ProcessedMessage claim, @Nullable String reason) {
            throw new UnsupportedOperationException("not used by the benchmark");
        }

        @Override
        public boolean completeReconciled(String consumer, String messageId) {
            throw new UnsupportedOperationException("not used by the benchmark");
        }

        @Override
        public boolean releaseReconciled(String consumer, String messageId) {
            throw new UnsupportedOperationException("not used by the benchmark");
        }

        @Override
        public java.util.Map<String, io.sumi.store.ConsumerLedgerStats> consumerStats() {
            return java.util.Map.of();
        }

        @Override
        public int deleteCompletedBefore(Instant cutoff, int limit) {
            return 0;
        }
    }
}
