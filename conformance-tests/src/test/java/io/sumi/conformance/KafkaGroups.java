package io.sumi.conformance;

import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.jspecify.annotations.Nullable;

/** What the Kafka kinds' drivers (Spring Kafka and Stream) ask the broker of a listener's consumer group. */
public final class KafkaGroups {

    private KafkaGroups() {}

    /**
     * The members of consumer group {@code group}, or {@code null} when it has none: a stopped
     * container's consumer has left its group.
     */
    public static @Nullable String members(Map<String, Object> adminConfig, String group) throws Exception {
        try (Admin admin = Admin.create(adminConfig)) {
            ConsumerGroupDescription description = admin.describeConsumerGroups(List.of(group))
                    .describedGroups()
                    .get(group)
                    .get(30, TimeUnit.SECONDS);
            return description.members().isEmpty()
                    ? null
                    : "members of group " + description.groupId() + ": " + description.members();
        }
    }
}
