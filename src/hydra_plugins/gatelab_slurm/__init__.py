"""gatelab's SLURM launcher (``hydra/launcher=cluster``). Hydra takes launchers only from the
``hydra_plugins`` namespace, so the class lives here; the checks it adds are in
:mod:`gatelab.launch.slurm`, the waves in :func:`gatelab.launch.plan.waves`."""
try:
    from hydra_plugins.hydra_submitit_launcher.submitit_launcher import SlurmLauncher as _SubmititSlurm
except ImportError:  # hydra-submitit-launcher absent: `pip install -e '.[cluster]'`
    _SubmititSlurm = None

if _SubmititSlurm is not None:
    class SlurmLauncher(_SubmititSlurm):
        """hydra-submitit-launcher's SLURM launcher, which first checks that some node of the
        partition can hold one job as requested (:func:`gatelab.launch.slurm.check_request`),
        submits the sweep in waves, a job's prerequisites (an FLNPF source, an earlier IMP round) in
        an earlier wave than the job (the dependency: a wave starts when the one before has ended),
        and reports a job that ends without a result instead of stopping the sweep
        (:func:`gatelab.launch.slurm.report_unfinished_jobs`)."""

        def launch(self, job_overrides, initial_job_idx):
            from gatelab.launch.plan import waves
            from gatelab.launch.slurm import check_request, cluster_nodes, log, report_unfinished_jobs, signal_window

            check_request(self.params, cluster_nodes(self.params.get("partition")))
            warning = signal_window(self.params)
            if warning:
                log.warning(warning)
            loader = self.hydra_context.config_loader
            stages = waves([list(o) for o in job_overrides], lambda o: loader.load_sweep_config(self.config, o))
            returns = []
            with report_unfinished_jobs(str(self.config.out_root)):
                for stage in stages:
                    returns += super().launch(stage, initial_job_idx + len(returns))
            return returns
