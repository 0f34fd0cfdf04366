package io.sumi.outbox;

import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.Set;

/** A set of topics, or all topics ({@value OutboxDispatcher#ALL_TOPICS}). Immutable. */
record TopicSet(boolean all, Set<String> topics) {

    static final TopicSet NONE = new TopicSet(false, Set.of());

    static final TopicSet ALL = new TopicSet(true, Set.of());

    TopicSet {
        topics = Set.copyOf(topics);
    }

    static TopicSet of(Collection<String> topics) {
        Set<String> set = new LinkedHashSet<>();
        for (String topic : topics) {
            if (topic == null || topic.isBlank()) {
                throw new IllegalArgumentException("Topic names must not be blank");
            }
            if (topic.trim().equals(OutboxDispatcher.ALL_TOPICS)) {
                return ALL;
            }
            set.add(topic.trim());
        }
        return set.isEmpty() ? NONE : new TopicSet(false, set);
    }

    boolean contains(String topic) {
        return all || topics.contains(topic);
    }

    boolean isEmpty() {
        return !all && topics.isEmpty();
    }

    @Override
    public String toString() {
        return all ? "all topics" : topics.isEmpty() ? "no topics" : topics.toString();
    }
}
