package io.sumi.autoconfigure.docs;

import static org.assertj.core.api.Assertions.assertThat;

import io.sumi.autoconfigure.docs.ConfigurationReference.Property;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@code docs/reference.md} is what the starter's configuration metadata says, and the metadata
 * describes every property. With {@code -Dsumi.docs.write=true} the page is written instead of
 * compared ({@link ConfigurationReference#REGENERATE}).
 */
class ConfigurationReferenceTests {

    private static final Path PAGE = Path.of("../docs/reference.md");

    private final ConfigurationReference reference = new ConfigurationReference(Path.of(""));

    @Test
    void everyPropertyHasADescription() throws IOException {
        assertThat(reference.properties())
                .as("properties without a description: give the record component an @param (or the field a"
                        + " Javadoc comment), or an entry in additional-spring-configuration-metadata.json")
                .filteredOn(property ->
                        property.description() == null || property.description().isBlank())
                .extracting(Property::name)
                .isEmpty();
    }

    @Test
    void referencePageIsWhatTheMetadataGenerates() throws IOException {
        String generated = reference.render(reference.properties(), reference.groups());
        if (Boolean.getBoolean("sumi.docs.write")) {
            Files.writeString(PAGE, generated, StandardCharsets.UTF_8);
            return;
        }
        String committed = Files.exists(PAGE) ? Files.readString(PAGE, StandardCharsets.UTF_8) : "";
        Path written = Path.of("target/reference.md");
        Files.writeString(written, generated, StandardCharsets.UTF_8);
        assertThat(committed)
                .as(
                        "docs/reference.md differs from the configuration metadata (generated: %s). Regenerate it with %s",
                        written.toAbsolutePath(), ConfigurationReference.REGENERATE)
                .isEqualTo(generated);
    }

    @Test
    void rootsAreTheSecondSegmentUnderSumiAndTheSumiSegmentElsewhere() {
        assertThat(List.of(
                        "sumi.kafka.poll-claim",
                        "sumi.budgets.<name>.limit",
                        "management.endpoint.sumi.cache.time-to-live"))
                .map(ConfigurationReference::root)
                .containsExactly("sumi.kafka", "sumi.budgets", "management.endpoint.sumi");
    }

    @Test
    void javadocInlineTagsBecomeMarkdown() {
        assertThat(ConfigurationReference.markdown("whether {@code sumi.leases.renewals{result=failed}} counts a <b> or"
                        + " {@link io.sumi.consumer.IdempotentExecutor}"))
                .isEqualTo("Whether `sumi.leases.renewals{result=failed}` counts a &lt;b&gt; or `IdempotentExecutor`.");
    }
}
