package io.sumi.architecture;

import static java.util.Map.entry;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import java.util.Comparator;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Sumi's architecture rules on every published module's main classes (the test kit's included;
 * tests, examples and benches are not imported). CONTRIBUTING.md, "Architecture rules", says why.
 */
class SumiArchitectureTests {

    /** Root package → module (artifactId). A new module adds its root here, or the internal-package rule fails. */
    static final Map<String, String> MODULES = Map.ofEntries(
            entry("io.sumi.jdbc", "sumi-jdbc-support"),
            entry("io.sumi.store", "sumi-processed-messages-store"),
            entry("io.sumi.store.redis", "sumi-store-redis"),
            entry("io.sumi.consumer", "sumi-consumer-core"),
            entry("io.sumi.budget", "sumi-budgets"),
            entry("io.sumi.outbox", "sumi-outbox-producer"),
            entry("io.sumi.outbox.cdc", "sumi-outbox-cdc"),
            entry("io.sumi.kafka", "sumi-binder-spring-kafka"),
            entry("io.sumi.rabbit", "sumi-binder-spring-amqp"),
            entry("io.sumi.jms", "sumi-binder-spring-jms"),
            entry("io.sumi.stream", "sumi-binder-spring-cloud-stream"),
            entry("io.sumi.autoconfigure", "sumi-spring-boot-starter"),
            entry("io.sumi.test", "sumi-test"));

    /**
     * Module → the other modules' internal packages it uses today. Each entry is a visible crossing
     * of a module boundary; an entry is added only with a reason, and removed when the shared code
     * moves to a public package. Anything not listed fails.
     */
    static final Map<String, Set<String>> INTERNAL_ALLOW_LIST = Map.ofEntries(
            // The JDBC plumbing (SQL templates, instant bindings, runner, claim tokens, transient
            // errors) shared by every module that talks to the database.
            entry("sumi-processed-messages-store", Set.of("io.sumi.jdbc.internal")),
            // The Redis ledger takes its claim tokens and its error-text rule (ErrorSummaries) from the
            // same place as the JDBC ledger, so both write the same tokens and the same last_error.
            entry("sumi-store-redis", Set.of("io.sumi.jdbc.internal")),
            entry("sumi-consumer-core", Set.of("io.sumi.jdbc.internal")),
            entry("sumi-budgets", Set.of("io.sumi.jdbc.internal")),
            entry("sumi-outbox-producer", Set.of("io.sumi.jdbc.internal")),
            entry("sumi-spring-boot-starter", Set.of("io.sumi.jdbc.internal")),
            // BatchArguments: the batch-listener argument filtering both batch-capable binders share.
            entry("sumi-binder-spring-kafka", Set.of("io.sumi.consumer.messaging.internal")),
            entry("sumi-binder-spring-amqp", Set.of("io.sumi.consumer.messaging.internal")),
            // The Stream binder settles through the Kafka binder's DeferredAcknowledgment and the
            // RabbitMQ binder's SettlingChannel.
            entry("sumi-binder-spring-cloud-stream", Set.of("io.sumi.kafka.internal", "io.sumi.rabbit.internal")));

    private static JavaClasses sumi;

    @BeforeAll
    static void importSumi() {
        sumi = new ClassFileImporter()
                .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages("io.sumi");
    }

    /**
     * No package of {@code io.sumi} reaches itself through others. Not frozen: every cycle fails. An
     * {@code internal} package never depends on its own API package; CONTRIBUTING.md ("Architecture
     * rules") says how the cycles that were once frozen were broken.
     */
    @Test
    void noPackageCycles() {
        ArchitectureRules.noPackageCycles("io.sumi").check(sumi);
    }

    /** An {@code internal} package is used only by its own module or an {@link #INTERNAL_ALLOW_LIST} entry. */
    @Test
    void internalPackagesStayInTheirModule() {
        ArchitectureRules.internalPackagesStayInTheirModule(SumiArchitectureTests::moduleOf, INTERNAL_ALLOW_LIST)
                .check(sumi);
    }

    /**
     * Spring Boot only in the starter, so the core and the binders work in a plain Spring application.
     * The test kit's auto-configuration (in its root package io.sumi.test, beside the package-private
     * classes it wires) hooks into {@code @SpringBootTest} and is the one other place.
     */
    @Test
    void springBootOnlyInTheStarter() {
        ArchitectureRules.springBootOnlyIn("io.sumi.autoconfigure..", "io.sumi.test")
                .check(sumi);
    }

    static Optional<String> moduleOf(JavaClass javaClass) {
        return moduleOf(javaClass.getPackageName(), MODULES);
    }

    /** The module of the longest root that {@code packageName} is in. */
    static Optional<String> moduleOf(String packageName, Map<String, String> modules) {
        return modules.entrySet().stream()
                .filter(root -> packageName.equals(root.getKey()) || packageName.startsWith(root.getKey() + "."))
                .max(Comparator.comparingInt(root -> root.getKey().length()))
                .map(Map.Entry::getValue);
    }
}
