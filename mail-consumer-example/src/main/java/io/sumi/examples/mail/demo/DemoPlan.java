package io.sumi.examples.mail.demo;

import io.sumi.examples.mail.MailRequest;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * The messages the demo publishes, in order, with their partitions: unique mails, copies of some
 * of them (half sent to the next partition right after the original, so that two consumer threads
 * reach the key at about the same moment; the rest sent again later), and messages without a key.
 */
public record DemoPlan(List<Message> messages, Set<String> uniqueKeys, Set<String> failingKeys, int concurrentDuplicates,
        int lateDuplicates, int poisonMessages) {

    /** What a message is in the plan. */
    public enum Kind {
        ORIGINAL, CONCURRENT_DUPLICATE, LATE_DUPLICATE, POISON
    }

    /**
     * One message to publish.
     *
     * @param key the idempotency key, sent as the {@code idempotency-key} header (none for poison)
     * @param partition the partition to send it to
     * @param payload the mail request, JSON or text
     */
    public record Message(@Nullable String key, int partition, String payload, Kind kind) {
    }

    public int duplicates() {
        return concurrentDuplicates + lateDuplicates;
    }

    public static DemoPlan generate(int total, double duplicateRatio, double concurrentShare, int failing, int poison,
            int partitions, long seed) {
        if (total < poison + 1) {
            throw new IllegalArgumentException("sumi.demo.messages (" + total + ") must exceed sumi.demo.poison-messages (" + poison + ")");
        }
        Random random = new Random(seed);
        int keyed = total - poison;
        int duplicates = (int) Math.round(keyed * Math.max(0, Math.min(0.5, duplicateRatio)));
        int unique = keyed - duplicates;
        int concurrent = Math.min(unique, (int) Math.round(duplicates * Math.max(0, Math.min(1, concurrentShare))));
        int late = duplicates - concurrent;

        record Timed(double time, Message message) {
        }
        List<Timed> timeline = new ArrayList<>(total);
        List<String> keys = new ArrayList<>(unique);
        List<String> payloads = new ArrayList<>(unique);
        for (int i = 0; i < unique; i++) {
            String key = String.format("mail-%06d", i);
            MailRequest mail = new MailRequest("customer" + (i % 500) + "@example.com", "Your order " + (10_000 + i) + " has shipped",
                    "Hello,\n\nyour order " + (10_000 + i) + " is on its way.\n\n-- The shop\n");
            // Half of the requests as JSON, half in the text form.
            String payload = i % 2 == 0 ? mail.toJson() : mail.toText();
            keys.add(key);
            payloads.add(payload);
            timeline.add(new Timed(i, new Message(key, i % partitions, payload, Kind.ORIGINAL)));
        }
        // Concurrent copies: right after the original, on the next partition.
        List<Integer> indexes = new ArrayList<>();
        for (int i = 0; i < unique; i++) {
            indexes.add(i);
        }
        Collections.shuffle(indexes, random);
        for (int n = 0; n < concurrent; n++) {
            int i = indexes.get(n);
            timeline.add(new Timed(i + 0.5, new Message(keys.get(i), (i + 1) % partitions, payloads.get(i), Kind.CONCURRENT_DUPLICATE)));
        }
        // Late copies: some time after the original, on any partition (a producer that retried, a replay).
        for (int n = 0; n < late; n++) {
            int i = random.nextInt(unique);
            double later = i + 1 + random.nextInt(Math.max(1, unique / 4)) + random.nextDouble() * 0.4;
            timeline.add(new Timed(later, new Message(keys.get(i), random.nextInt(partitions), payloads.get(i), Kind.LATE_DUPLICATE)));
        }
        // Messages without a key, spread over the run.
        for (int n = 0; n < poison; n++) {
            MailRequest mail = new MailRequest("ops@example.com", "Poison message " + (n + 1) + " (no idempotency key)",
                    "This message was published without a key; it must reach the dead-letter topic, never a mailbox.");
            timeline.add(new Timed(unique * (n + 1.0) / (poison + 1) + 0.7, new Message(null, n % partitions, mail.toJson(), Kind.POISON)));
        }
        timeline.sort(Comparator.comparingDouble(Timed::time));

        Set<String> failingKeys = new LinkedHashSet<>();
        List<Integer> failingIndexes = new ArrayList<>(indexes);
        Collections.shuffle(failingIndexes, random);
        for (int n = 0; n < Math.min(failing, unique); n++) {
            failingKeys.add(keys.get(failingIndexes.get(n)));
        }
        List<Message> messages = timeline.stream().map(Timed::message).toList();
        return new DemoPlan(messages, new LinkedHashSet<>(keys), failingKeys, concurrent, late, poison);
    }
}
