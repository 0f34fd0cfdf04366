package io.sumi.architecture;

import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.lang.EvaluationResult;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Each of Sumi's architecture rules, run on fixtures that break it: the rule must fail, naming the culprit. */
class ArchitectureRulesFixtureTests {

    private static final String FIXTURE = "io.sumi.architecture.fixture";

    @Test
    void packageCycleFails() {
        JavaClasses fixture = new ClassFileImporter().importPackages(FIXTURE + ".cycle");

        EvaluationResult result =
                ArchitectureRules.noPackageCycles(FIXTURE + ".cycle").evaluate(fixture);

        assertThat(result.hasViolation()).isTrue();
        assertThat(result.getFailureReport().getDetails())
                .anySatisfy(line -> assertThat(line).contains("Cycle detected"));
    }

    @Test
    void internalPackageFromAnotherModuleFailsUnlessAllowListed() {
        JavaClasses fixture = new ClassFileImporter().importPackages(FIXTURE + ".internal");
        Map<String, String> modules = Map.of(
                FIXTURE + ".internal.owner", "owner",
                FIXTURE + ".internal.user", "user",
                FIXTURE + ".internal.allowed", "allowed");
        Map<String, Set<String>> allowList = Map.of("allowed", Set.of(FIXTURE + ".internal.owner.internal"));

        EvaluationResult result = ArchitectureRules.internalPackagesStayInTheirModule(
                        javaClass -> SumiArchitectureTests.moduleOf(javaClass.getPackageName(), modules), allowList)
                .evaluate(fixture);

        assertThat(result.hasViolation()).isTrue();
        // The intruder only: the owner and the allow-listed friend pass.
        assertThat(result.getFailureReport().getDetails())
                .singleElement()
                .satisfies(
                        line -> assertThat(line).startsWith("user uses owner's").contains("Intruder"));
    }

    @Test
    void classInNoDeclaredModuleFails() {
        JavaClasses fixture = new ClassFileImporter().importPackages(FIXTURE + ".internal");

        EvaluationResult result = ArchitectureRules.internalPackagesStayInTheirModule(
                        javaClass -> SumiArchitectureTests.moduleOf(
                                javaClass.getPackageName(), Map.of(FIXTURE + ".internal.owner", "owner")),
                        Map.of())
                .evaluate(fixture);

        assertThat(result.getFailureReport().getDetails())
                .anySatisfy(line -> assertThat(line).contains("Intruder belongs to no declared module"));
    }

    @Test
    void springBootOutsideTheStarterFails() {
        JavaClasses fixture = new ClassFileImporter().importPackages(FIXTURE + ".boot");

        EvaluationResult result =
                ArchitectureRules.springBootOnlyIn(FIXTURE + ".boot.starter..").evaluate(fixture);

        assertThat(result.hasViolation()).isTrue();
        assertThat(result.getFailureReport().getDetails())
                .isNotEmpty()
                .allSatisfy(line -> assertThat(line).contains("CoreApp"));
    }
}
