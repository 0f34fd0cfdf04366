package io.sumi.kafka.share;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.springframework.context.SmartLifecycle;
import org.springframework.kafka.core.KafkaAdmin;
import org.springframework.kafka.listener.AbstractMessageListenerContainer;

/** What the share-group tests ask of the broker's share groups, through the application's {@link KafkaAdmin}. */
public final class ShareGroups {

    private ShareGroups() {}

    /**
     * Sets {@code share.auto.offset.reset=earliest} on {@code groups} before the listener containers
     * start: a new share group starts at the latest offset, and the tests' records may be sent
     * before its first member joins.
     */
    public static SmartLifecycle fromEarliest(KafkaAdmin kafkaAdmin, Collection<String> groups) {
        return new SmartLifecycle() {
            private volatile boolean running;

            @Override
            public void start() {
                configure(
                        kafkaAdmin.getConfigurationProperties(), groups, Map.of("share.auto.offset.reset", "earliest"));
                running = true;
            }

            @Override
            public void stop() {
                running = false;
            }

            @Override
            public boolean isRunning() {
                return running;
            }

            @Override
            public int getPhase() {
                return AbstractMessageListenerContainer.DEFAULT_PHASE - 10;
            }
        };
    }

    /** Sets the group configs {@code configs} on each of {@code groups}. */
    public static void configure(
            Map<String, Object> adminConfig, Collection<String> groups, Map<String, String> configs) {
        try (Admin admin = Admin.create(adminConfig)) {
            Map<ConfigResource, Collection<AlterConfigOp>> changes = new HashMap<>();
            for (String group : groups) {
                List<AlterConfigOp> operations = new ArrayList<>();
                configs.forEach((name, value) ->
                        operations.add(new AlterConfigOp(new ConfigEntry(name, value), AlterConfigOp.OpType.SET)));
                changes.put(new ConfigResource(ConfigResource.Type.GROUP, group), operations);
            }
            admin.incrementalAlterConfigs(changes).all().get(30, TimeUnit.SECONDS);
        } catch (Exception ex) {
            throw new IllegalStateException("Could not configure the share groups " + groups + ": " + configs, ex);
        }
    }

    /**
     * The members of share group {@code group} that have an assignment (none: an empty list). A
     * group that no consumer has joined yet has none: the broker answers "group not found" until its
     * first member's heartbeat creates it, which a test that waits for its consumers may ask first.
     */
    public static List<String> assignedMembers(Map<String, Object> adminConfig, String group) throws Exception {
        try (Admin admin = Admin.create(adminConfig)) {
            ShareGroupDescription description;
            try {
                description = admin.describeShareGroups(List.of(group))
                        .describedGroups()
                        .get(group)
                        .get(30, TimeUnit.SECONDS);
            } catch (ExecutionException ex) {
                if (ex.getCause() instanceof GroupIdNotFoundException) {
                    return List.of();
                }
                throw ex;
            }
            List<String> members = new ArrayList<>();
            description.members().forEach(member -> {
                if (!member.assignment().topicPartitions().isEmpty()) {
                    members.add(member.consumerId());
                }
            });
            return members;
        }
    }
}
